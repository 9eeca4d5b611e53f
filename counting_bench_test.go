package bloom

import (
	"fmt"
	"testing"
)

// BenchmarkCounting times Add, Test (present and absent items), Count and
// Remove on a counting filter holding n distinct random 16-byte keys at
// p = 0.01, exclusive and concurrent (single goroutine). Add and Remove
// cycle through a window of min(n/16, 65536) keys and undo the window,
// timer stopped, after each cycle, so the filter stays within 1/16 of n
// items (a window much smaller than that would stay in cache). The
// comparison with other libraries lives in bench/.
func BenchmarkCounting(b *testing.B) {
	const queries = 1 << 16
	ks := keySets[0] // random16
	for _, n := range []uint64{100_000, 10_000_000} {
		for _, conc := range []bool{false, true} {
			c, err := NewCounting(n, 0.01, countingVariant{false, conc}.opts()...)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 128)
			for i := range n {
				c.Add(ks.key(buf, i))
			}
			// Present keys spread over [0, n); absent keys from n on; each
			// set in one compact array so reading a key is no cache miss.
			present, absent := make([][]byte, queries), make([][]byte, queries)
			flat := make([]byte, 2*16*queries)
			for i := range uint64(queries) {
				present[i] = append(flat[32*i:32*i:32*i+16], ks.key(buf, i*n/queries)...)
				absent[i] = append(flat[32*i+16:32*i+16:32*i+32], ks.key(buf, n+i)...)
			}
			window := min(queries, int(n/16))
			mode := map[bool]string{false: "exclusive", true: "concurrent"}[conc]
			name := fmt.Sprintf("n=%.0e/%s", float64(n), mode)
			b.Run(name+"/Add", func(b *testing.B) { benchWindow(b, absent[:window], c.Add, func(k []byte) { c.Remove(k) }) })
			for _, q := range []struct {
				name string
				keys [][]byte
			}{{"Test", present}, {"TestAbsent", absent}} {
				b.Run(name+"/"+q.name, func(b *testing.B) {
					b.ReportAllocs()
					for i := 0; b.Loop(); i++ {
						c.Test(q.keys[i%queries])
					}
				})
			}
			b.Run(name+"/Count", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					c.Count(present[i%queries])
				}
			})
			b.Run(name+"/Remove", func(b *testing.B) {
				benchWindow(b, present[:window], func(k []byte) { c.Remove(k) }, c.Add)
			})
		}
	}
}

// benchWindow times op on keys, cyclically, and after each pass over them
// calls undo on every key with the timer stopped.
func benchWindow(b *testing.B, keys [][]byte, op, undo func([]byte)) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		op(keys[i%len(keys)])
		if i%len(keys) == len(keys)-1 {
			b.StopTimer()
			for _, k := range keys {
				undo(k)
			}
			b.StartTimer()
		}
	}
}
