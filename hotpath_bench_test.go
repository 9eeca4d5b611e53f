package bloom

import (
	"math/rand/v2"
	"testing"
)

// Micro-benchmarks of the hot path, in isolation: hashing, and the probe
// of a pre-hashed item. Peer comparisons live in the bench/ module.

// BenchmarkHash hashes independent 16-byte keys (no dependency between
// iterations), as a filter's Test loop does, with each hash function.
func BenchmarkHash(b *testing.B) {
	keyed, _ := New(1000, 0.01, WithKey([16]byte{1}))
	unkeyed, _ := New(1000, 0.01)
	q := make([]byte, 16<<10)
	for i := range q {
		q[i] = byte(i * 7)
	}
	for _, f := range []*Filter{unkeyed, keyed} {
		b.Run(f.HashID().String(), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(16)
			var s uint64
			for i := 0; b.Loop(); i++ {
				j := (i & 1023) * 16
				s += f.Hash(q[j : j+16]).H1
			}
			_ = s
		})
	}
}

func benchFilter(b *testing.B, n uint64, layout Layout) (*Filter, [][]byte) {
	b.Helper()
	f, err := New(n, 0.01, WithLayout(layout))
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	flat := make([]byte, 16*(n+1<<21))
	for i := range flat {
		flat[i] = byte(r.Uint32())
	}
	for i := range n {
		f.Add(flat[16*i : 16*i+16])
	}
	// Queries: half present, half absent, copied into one compact array
	// so that fetching a query key is never itself a cache miss.
	q := make([]byte, 16<<21)
	keys := make([][]byte, 1<<21)
	for i := range keys {
		j := n + uint64(i)
		if i%2 == 0 {
			j = r.Uint64N(n)
		}
		keys[i] = q[16*i : 16*i+16 : 16*i+16]
		copy(keys[i], flat[16*j:16*j+16])
	}
	return f, keys
}

func BenchmarkFilter(b *testing.B) {
	for _, layout := range []Layout{Blocked, Classic} {
		for _, n := range []uint64{1e5, 1e7} {
			f, keys := benchFilter(b, n, layout)
			name := layout.String() + "/n=" + map[uint64]string{1e5: "1e5", 1e7: "1e7"}[n]
			b.Run(name+"/Test", func(b *testing.B) { benchTest(b, f, keys) })
			if f.mode == modeBlockedVec7 || f.mode == modeBlockedVec14 {
				// The same filter through the scalar probes (probe_vec.go).
				g := scalarTwin(f)
				b.Run(name+"/TestScalar", func(b *testing.B) { benchTest(b, g, keys) })
			}
			b.Run(name+"/TestMany", func(b *testing.B) {
				b.ReportAllocs()
				dst := make([]bool, 256)
				c := 0
				for i := 0; b.Loop(); i++ {
					j := (i * 256) & (len(keys) - 1)
					dst = f.TestMany(keys[j:j+256], dst)
					for _, v := range dst {
						if v {
							c++
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256), "ns/item")
			})
			b.Run(name+"/Add", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					f.Add(keys[i&(len(keys)-1)])
				}
			})
			// Filling: pre-hashed adds into an empty filter of the same
			// size, new items until b.N passes len(keys).
			hs := make([]Hash, len(keys))
			for i, k := range keys {
				hs[i] = f.Hash(k)
			}
			b.Run(name+"/AddHashFill", func(b *testing.B) {
				g, _ := New(n, 0.01, WithLayout(layout))
				benchAddHash(b, g.AddHash, hs)
			})
			if asmAdd && f.mode != modeOther {
				// The same through the Go probes (probe_add_amd64.go).
				b.Run(name+"/AddHashFillGo", func(b *testing.B) {
					g, _ := New(n, 0.01, WithLayout(layout))
					benchAddHash(b, g.addBlocked, hs)
				})
			}
		}
	}
}

// benchAddHash times single adds of pre-hashed items.
func benchAddHash(b *testing.B, add func(Hash) bool, hs []Hash) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		add(hs[i&(len(hs)-1)])
	}
}

// benchTest times single Tests of keys, the caller branching on each.
func benchTest(b *testing.B, f *Filter, keys [][]byte) {
	b.ReportAllocs()
	c := 0
	for i := 0; b.Loop(); i++ {
		if f.Test(keys[i&(len(keys)-1)]) {
			c++
		}
	}
}
