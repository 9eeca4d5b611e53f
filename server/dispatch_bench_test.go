package server

import (
	"io"
	"strconv"
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

// TestDispatchAllocs: a hot command on the connection's last key
// allocates nothing; on another key, only the key's string.
func TestDispatchAllocs(t *testing.T) {
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
