package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/bloomery/bloom/internal/transcript"
)

// Replays of the transcripts recorded from redis-server with RedisBloom
// (testdata/redisbloom, internal/transcript): every case, in RESP2 and
// RESP3, against a fresh server, each reply compared byte for byte.

// transcriptReplay says how to replay one transcript.
type transcriptReplay struct {
	file string // in testdata/redisbloom
	cfg  Config
	// layout: compare the replies marked as depending on RedisBloom's
	// filter layout (">@"); a server making filters in its own layout
	// skips them.
	layout bool
	// skip names cases not to run, each with the reason (a documented
	// limit of the configuration).
	skip map[string]string
	// skipIf, when set, says why a case is not to run ("" to run it):
	// for cases that need what the server does not hold.
	skipIf func(c *transcript.Case) string
}

// replayTranscript replays r.file against a server started with r.cfg
// and fails the test for each reply that differs. It logs how many
// replies were compared exactly, by shape (">~": the recording server's
// own values, such as its version and client ids) and not at all (">@"
// without layout), so that a skip is never silent.
func replayTranscript(t *testing.T, r transcriptReplay) replayCounts {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "redisbloom", r.file))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := transcript.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	exact, shape, skipped := 0, 0, 0
	skippedBy := map[string]int{} // replies of the cases skipped, by reason
	kept := cases[:0]
	for _, c := range cases {
		if why, ok := r.skip[c.Name]; ok {
			t.Logf("%s: case %q skipped: %s", r.file, c.Name, why)
			delete(r.skip, c.Name)
			continue
		}
		if r.skipIf != nil {
			if why := r.skipIf(c); why != "" {
				for _, cmd := range c.Cmds {
					skippedBy[why] += len(cmd.Replies)
				}
				continue
			}
		}
		kept = append(kept, c)
		for _, cmd := range c.Cmds {
			n := len(cmd.Replies)
			switch {
			case cmd.Layout && !r.layout:
				skipped += n
			case cmd.Shape:
				shape += n
			default:
				exact += n
			}
		}
	}
	for name := range r.skip {
		t.Errorf("%s: no case %q to skip", r.file, name)
	}
	cases = kept
	if exact == 0 && len(skippedBy) == 0 {
		t.Fatalf("%s: no reply to compare", r.file)
	}
	_, addr := startServer(t, r.cfg)
	// Case by case: a case that cannot go on (a reference to an element
	// a wrong reply lacks) fails alone.
	ndiffs := 0
	for _, c := range cases {
		diffs, err := transcript.Compare(addr, []*transcript.Case{c}, r.layout)
		for _, d := range diffs {
			t.Errorf("%s %s", r.file, d)
		}
		if err != nil {
			t.Errorf("%s: %v", r.file, err)
		}
		ndiffs += len(diffs)
	}
	t.Logf("%s: %d cases; %d replies compared exactly, %d by shape (the recording server's own values), %d not compared (RedisBloom's filter layout); %d differ",
		r.file, len(cases), exact, shape, skipped, ndiffs)
	for why, n := range skippedBy {
		t.Logf("%s: %d replies not compared: their cases need %s", r.file, n, why)
	}
	return replayCounts{exact: exact, shape: shape, layout: skipped, cases: skippedBy}
}

// replayCounts are the replies of a replay: compared exactly, by shape,
// not compared (">@" without layout), and in cases skipped, by reason.
type replayCounts struct {
	exact, shape, layout int
	cases                map[string]int
}

// TestTranscriptConn replays conn.transcript (what clients send on
// connect, client-side caching on one connection, MULTI/EXEC) with each
// way of serving connections and with the Redis backend: tracking and
// transactions work at the command level, whatever the backend.
func TestTranscriptConn(t *testing.T) {
	configs := map[string]func(t *testing.T) transcriptReplay{
		"event loops":        func(*testing.T) transcriptReplay { return transcriptReplay{} },
		"goroutine per conn": func(*testing.T) transcriptReplay { return transcriptReplay{cfg: Config{GoroutinePerConn: true}} },
		"redis backend": func(t *testing.T) transcriptReplay {
			return transcriptReplay{cfg: Config{Backend: "redis://" + redistest.Start(t).Addr()},
				skip: map[string]string{"tracking: rename invalidates both keys": "the Redis backend has no RENAME"}}
		},
	}
	for name, setup := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := setup(t)
			r.file = "conn.transcript"
			replayTranscript(t, r)
		})
	}
}
