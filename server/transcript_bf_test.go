package server

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bloomery/bloom/internal/transcript"
)

// The RedisBloom transcripts (testdata/redisbloom, recorded from a real
// RedisBloom 8) replayed against bloomery serve, RESP2 and RESP3, every
// reply compared byte for byte (docs/SERVER.md, "Compatibility").

// replayTally counts the replies of a replay: compared, and skipped by
// reason.
type replayTally struct {
	compared int
	skipped  map[string]int
}

func (r *replayTally) skip(reason string, n int) {
	if r.skipped == nil {
		r.skipped = map[string]int{}
	}
	r.skipped[reason] += n
}

func (r *replayTally) String() string {
	reasons := make([]string, 0, len(r.skipped))
	for why, n := range r.skipped {
		reasons = append(reasons, why+": "+itoa(n))
	}
	sort.Strings(reasons)
	return itoa(r.compared) + " replies compared; skipped: " + strings.Join(reasons, ", ")
}

func itoa(n int) string { return string(fmtInt(int64(n))) }

// readTranscript parses a recorded transcript of testdata/redisbloom.
func readTranscript(t *testing.T, name string) []*transcript.Case {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "redisbloom", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := transcript.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cases
}

// otherTypes are the commands of the value types the transcripts use
// besides Bloom filters: a case with one the server lacks is skipped.
var otherTypes = map[string]bool{
	"SET": true, "GET": true, "APPEND": true, "STRLEN": true,
	"LPUSH": true, "RPUSH": true, "HSET": true, "SADD": true, "ZADD": true,
}

// missingType is the first command of c of another value type that srv
// does not have, or "".
func missingType(srv *Server, c *transcript.Case) string {
	for _, cmd := range c.Cmds {
		name := strings.ToUpper(string(cmd.Args[0].Lit))
		if (otherTypes[name] || strings.HasPrefix(name, "CF.")) && srv.cmds.lookup(cmd.Args[0].Lit) == nil {
			return name
		}
	}
	return ""
}

// skipReason says why the cases using command name are not replayed.
func skipReason(name string) string {
	if strings.HasPrefix(name, "CF.") {
		return "cuckoo filters (issue 14)"
	}
	return "strings, lists, hashes, sets, sorted sets (not held)"
}

// replayBF replays the named transcripts against a server started with
// cfg and fails the test on every difference. The replies of commands
// marked as layout-dependent are compared only when layout is true (the
// server makes RedisBloom-layout filters). Cases using a command the
// server lacks (other value types) are skipped and counted.
func replayBF(t *testing.T, cfg Config, layout bool, names ...string) replayTally {
	t.Helper()
	srv, addr := startServer(t, cfg)
	var tally replayTally
	for _, name := range names {
		var run []*transcript.Case
		for _, c := range readTranscript(t, name) {
			replies := 0
			for _, cmd := range c.Cmds {
				replies += len(cmd.Replies)
			}
			if missing := missingType(srv, c); missing != "" {
				tally.skip(skipReason(missing), replies)
				continue
			}
			run = append(run, c)
			for _, cmd := range c.Cmds {
				if cmd.Layout && !layout {
					tally.skip("layout-dependent (>@)", len(cmd.Replies))
				} else {
					tally.compared += len(cmd.Replies)
				}
			}
		}
		// One case at a time: a case that cannot go on (a reference to
		// an element a wrong reply lacks) fails alone.
		failed := 0
		for _, c := range run {
			diffs, err := transcript.Compare(addr, []*transcript.Case{c}, layout)
			for _, d := range diffs {
				t.Errorf("%s %v", name, d)
			}
			if err != nil {
				t.Errorf("%s line %d: %v", name, c.Line, err)
			}
			if len(diffs) > 0 || err != nil {
				failed++
			}
		}
		if failed > 0 {
			t.Errorf("%s: %d of %d cases differ", name, failed, len(run))
		}
	}
	t.Log(tally.String())
	return tally
}

// TestTranscriptBF replays bf.transcript (Bloom filter keys only: every
// case runs) and bf_wrongtype.transcript (the cases whose other value
// types the server does not hold are skipped) with Bloomery's layout.
func TestTranscriptBF(t *testing.T) {
	tally := replayBF(t, Config{}, false, "bf.transcript", "bf_wrongtype.transcript")
	want := 0 // every reply of bf.transcript not marked >@
	for _, c := range readTranscript(t, "bf.transcript") {
		for _, cmd := range c.Cmds {
			if !cmd.Layout {
				want += len(cmd.Replies)
			}
		}
	}
	if tally.compared < want {
		t.Errorf("%d replies compared, want at least the %d of bf.transcript", tally.compared, want)
	}
}
