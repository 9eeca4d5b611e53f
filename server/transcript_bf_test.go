package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomery/bloom/internal/transcript"
)

// The BF.* transcripts (bf.transcript, bf_wrongtype.transcript), recorded
// from RedisBloom 8, replayed against the memory backend (docs/SERVER.md,
// "Compatibility").

// otherTypes are the commands of the value types the transcripts use
// besides Bloom filters.
var otherTypes = map[string]bool{
	"SET": true, "GET": true, "APPEND": true, "STRLEN": true,
	"LPUSH": true, "RPUSH": true, "HSET": true, "SADD": true, "ZADD": true,
}

// needsOtherType says why srv cannot run c: a command of another value
// type that srv does not have ("" when it has them all).
func needsOtherType(srv *Server) func(c *transcript.Case) string {
	return func(c *transcript.Case) string {
		for _, cmd := range c.Cmds {
			name := strings.ToUpper(string(cmd.Args[0].Lit))
			if srv.cmds.lookup(cmd.Args[0].Lit) != nil {
				continue
			}
			switch {
			case strings.HasPrefix(name, "CF."):
				return "cuckoo filters (issue 14)"
			case otherTypes[name]:
				return "strings, lists, hashes, sets or sorted sets, which the server does not hold"
			}
		}
		return ""
	}
}

// TestTranscriptBF replays bf.transcript (Bloom filter keys only: every
// case runs) and bf_wrongtype.transcript (its cases with value types the
// server does not hold are skipped, counted) with Bloomery's layout.
func TestTranscriptBF(t *testing.T) {
	// The command table is the same for every server: one tells which
	// commands exist.
	srv, _ := startServer(t, Config{})
	counts := replayTranscript(t, transcriptReplay{file: "bf.transcript"})
	if want := unmarkedReplies(t, "bf.transcript"); counts.exact != want || len(counts.cases) != 0 {
		t.Errorf("bf.transcript: %d replies compared, %v skipped; want all %d not marked >@", counts.exact, counts.cases, want)
	}
	replayTranscript(t, transcriptReplay{file: "bf_wrongtype.transcript", skipIf: needsOtherType(srv)})
}

// unmarkedReplies counts the replies of a transcript not marked >@.
func unmarkedReplies(t *testing.T, file string) int {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "redisbloom", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := transcript.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		for _, cmd := range c.Cmds {
			if !cmd.Layout {
				n += len(cmd.Replies)
			}
		}
	}
	return n
}

// TestTranscriptBFRedisBloomLayout replays bf.transcript with new filters
// in RedisBloom's layout: every reply compared, the layout-dependent ones
// (">@": sizes, dump bytes, false positives) included.
func TestTranscriptBFRedisBloomLayout(t *testing.T) {
	counts := replayTranscript(t, transcriptReplay{file: "bf.transcript", cfg: Config{FilterLayout: LayoutRedisBloom}, layout: true})
	if counts.layout != 0 || len(counts.cases) != 0 {
		t.Errorf("bf.transcript: %d replies not compared, %v skipped; want every reply compared", counts.layout, counts.cases)
	}
}
