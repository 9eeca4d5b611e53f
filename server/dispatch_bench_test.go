package server

import (
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomery/bloom/internal/resp"
)

// The cost of running one command once it is parsed: dispatch, the
// filter, the log record, the reply and the counters, without the
// network, on a server with a log.

// dispatchConn returns a connection of a server with a log in a
// temporary directory, whose replies are discarded, a Bloom filter "bf"
// and a cuckoo filter "cf".
func dispatchConn(tb testing.TB) *conn {
	tb.Helper()
	srv, err := New(Config{Dir: tb.TempDir(), Logger: discardLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.close() })
	c := srv.newConnState(1, nil, nil, srv.metrics.shards[0])
	c.w = resp.NewWriter(io.Discard)
	c.dispatch(words("BF.RESERVE", "bf", "0.01", "1000000"))
	c.dispatch(words("CF.RESERVE", "cf", "4000000"))
	c.flush()
	return c
}

func words(w ...string) [][]byte {
	out := make([][]byte, len(w))
	for i, s := range w {
		out[i] = []byte(s)
	}
	return out
}

// dispatchCases are the hot commands, each with a fresh item per call.
var dispatchCases = []struct {
	name  string
	args  func(i int) [][]byte
	limit float64 // allocations per command at most
}{
	{"BF.ADD", func(i int) [][]byte { return words("BF.ADD", "bf", strconv.Itoa(i)) }, 0},
	{"BF.EXISTS", func(i int) [][]byte { return words("BF.EXISTS", "bf", strconv.Itoa(i)) }, 0},
	{"BF.MADD10", func(i int) [][]byte {
		a := words("BF.MADD", "bf")
		for j := range 10 {
			a = append(a, []byte(strconv.Itoa(10*i+j)))
		}
		return a
	}, 0},
	// A key per command (the connection keeps only its last key): the
	// key's string.
	{"BF.EXISTS/keys", func(i int) [][]byte { return words("BF.EXISTS", "bf"+strconv.Itoa(i%2), strconv.Itoa(i)) }, 1},
	{"CF.ADD", func(i int) [][]byte { return words("CF.ADD", "cf", strconv.Itoa(i)) }, 0},
	{"CF.EXISTS", func(i int) [][]byte { return words("CF.EXISTS", "cf", strconv.Itoa(i)) }, 0},
}

// TestNoRaceDispatchAllocs: a hot command on the connection's last key
// allocates nothing; on another key, only the key's string. (The race
// detector's instrumentation allocates in Scalable.AddMany, which
// BF.MADD goes through.)
func TestNoRaceDispatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates; the race-free pass (make accuracy) runs this")
	}
	onePath(t)
	c := dispatchConn(t)
	for _, dc := range dispatchCases {
		batch := make([][][]byte, 200)
		for i := range batch {
			batch[i] = dc.args(i)
		}
		i := 0
		allocs := testing.AllocsPerRun(len(batch)-1, func() {
			c.dispatch(batch[i])
			i++
			if i%16 == 0 {
				c.flush()
			}
		})
		if allocs > dc.limit {
			t.Errorf("%s: %.2f allocations per command, want at most %v", dc.name, allocs, dc.limit)
		}
		c.flush()
	}
}

// BenchmarkDispatch runs hot commands, the replies flushed (and the log
// written) every 16, as a pipeline of 16 is, each item a fresh one.
func BenchmarkDispatch(b *testing.B) {
	for _, dc := range dispatchCases {
		b.Run(dc.name, func(b *testing.B) {
			c := dispatchConn(b)
			batch := make([][][]byte, 1<<12)
			for i := range batch {
				batch[i] = dc.args(i)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i > 0 && i%len(batch) == 0 {
					// Fresh items: CF.ADD stores duplicates, and a fifth
					// copy of an item would grow the filter.
					b.StopTimer()
					for j := range batch {
						batch[j] = dc.args(i + j)
					}
					b.StartTimer()
				}
				c.dispatch(batch[i%len(batch)])
				i++
				if i%16 == 0 {
					c.flush()
				}
			}
		})
	}
}

// runCases are pipelines of 16 commands that run together (conn_run.go).
var runCases = []struct {
	name string
	cmd  string
}{
	{"BF.EXISTS", "BF.EXISTS bf"},
	{"CF.EXISTS", "CF.EXISTS cf"},
	{"BF.ADD", "BF.ADD bf"}, // logged: dispatchConn has a log
	// CF.ADDNX, not CF.ADD: the pipelines repeat their items, and CF.ADD
	// would store every copy until the filter grew.
	{"CF.ADDNX", "CF.ADDNX cf"},
}

// pipeline16 is the RESP of 16 commands cmd … item, items from i.
func pipeline16(cmd string, i int) []byte {
	var b []byte
	for j := range 16 {
		b = append(b, encodeCommand(append(strings.Fields(cmd), strconv.Itoa(i+j))...)...)
	}
	return b
}

// runPipeline reads the pipeline p into c's input and serves it as a
// connection does, runs and all, then flushes the replies.
func runPipeline(c *conn, in *resp.Buffer, p []byte, args [][]byte) [][]byte {
	copy(in.Space(len(p)), p)
	in.Commit(len(p))
	for c.r.Complete() {
		args, _ = c.r.ReadCommand(args)
		c.dispatchStream(args)
	}
	c.endRun()
	c.flush()
	return args
}

// TestNoRaceRunAllocs: a pipelined run of tests, or of logged adds
// (Bloom or cuckoo), allocates nothing per command.
func TestNoRaceRunAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates; the race-free pass (make accuracy) runs this")
	}
	onePath(t)
	c := dispatchConn(t)
	var in resp.Buffer
	c.r = resp.NewBufferReader(&in, c.srv.cfg.Limits)
	for _, rc := range runCases {
		p := pipeline16(rc.cmd, 0)
		var args [][]byte
		args = runPipeline(c, &in, p, args)
		if allocs := testing.AllocsPerRun(100, func() { args = runPipeline(c, &in, p, args) }); allocs != 0 {
			t.Errorf("%s: %.2f allocations per 16 pipelined commands", rc.name, allocs)
		}
		if n := c.shard.cmds[c.srv.cmds.lookup([]byte(strings.Fields(rc.cmd)[0])).idx].calls.Load(); n != 102*16 {
			// One pipeline before, one AllocsPerRun's warm-up, 100 runs.
			t.Errorf("%s: %d calls counted, want %d", rc.name, n, 102*16)
		}
	}
}

// BenchmarkRuns serves pipelines of 16 tests on one filter (dispatchConn's,
// sized for a million items: in the caches), each a run; ns/command is per
// command.
func BenchmarkRuns(b *testing.B) {
	for _, rc := range runCases {
		b.Run(rc.name, func(b *testing.B) {
			c := dispatchConn(b)
			var in resp.Buffer
			c.r = resp.NewBufferReader(&in, c.srv.cfg.Limits)
			ps := make([][]byte, 256)
			for i := range ps {
				ps[i] = pipeline16(rc.cmd, 16*i)
			}
			var args [][]byte
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				args = runPipeline(c, &in, ps[i%len(ps)], args)
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(16*i), "ns/command")
		})
	}
}
