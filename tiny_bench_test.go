package bloom

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkTinyFilter compares the layouts on the small sub-filters a
// Scalable filter makes classic (docs/DESIGN.md §5): Test and Add of
// 16-byte keys (half present, half absent) on one filter that stays in
// the cache ("hot"), and on one of 2^17 filters picked at random per
// call, 4–120 MB in all, as a server holding a filter per key sees them
// ("cold": each call misses the cache for the filter and its bits; the
// calls are independent, so the misses of consecutive calls may overlap,
// which a server's requests, with their other work in between, mostly do
// not). The sizes are where the rule draws its line: 1 block, 3 blocks
// (a server's default first sub-filter), 8 blocks (the largest blocked
// array the rule replaces) and 15 blocks (one it keeps).
func BenchmarkTinyFilter(b *testing.B) {
	cases := []struct {
		n uint64
		p float64
	}{{20, 0.01}, {100, 0.005}, {300, 0.005}, {500, 0.0025}}
	for _, c := range cases {
		for _, layout := range []Layout{Blocked, Classic} {
			sz, err := Size(c.n, c.p, layout)
			if err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("n=%d/p=%g/%s/%dB", c.n, c.p, layout, sz.Bytes())
			benchTiny(b, name, sz)
		}
	}
}

// tinyKeys is how many query keys (and filter picks) a tiny benchmark
// cycles through.
const tinyKeys = 1 << 20

func benchTiny(b *testing.B, name string, sz Sizing) {
	r := rand.New(rand.NewPCG(3, sz.N))
	key := func(i uint64) []byte {
		k := make([]byte, 16)
		keySets[0].key(k, i)
		return k
	}
	// Every filter holds the same N items (a copy of one filter's bits):
	// what differs between them is where they are in memory.
	proto, err := NewSized(sz)
	if err != nil {
		b.Fatal(err)
	}
	for i := range sz.N {
		proto.Add(key(i))
	}
	keys := make([][]byte, tinyKeys)
	for i := range keys {
		j := sz.N + uint64(i)
		if i%2 == 0 {
			j = r.Uint64N(sz.N)
		}
		keys[i] = key(j)
	}
	for _, cold := range []bool{false, true} {
		count := 1
		mode := "hot"
		if cold {
			count, mode = 1<<17, "cold"
		}
		fs := make([]*Filter, count)
		for i := range fs {
			f, err := NewSized(sz)
			if err != nil {
				b.Fatal(err)
			}
			copy(f.words(), proto.words())
			fs[i] = f
		}
		pick := make([]uint32, tinyKeys)
		for i := range pick {
			pick[i] = uint32(r.IntN(count))
		}
		b.Run(name+"/"+mode+"/Test", func(b *testing.B) {
			b.ReportAllocs()
			c := 0
			for i := 0; b.Loop(); i++ {
				j := i & (tinyKeys - 1)
				if fs[pick[j]].Test(keys[j]) {
					c++
				}
			}
		})
		b.Run(name+"/"+mode+"/Add", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				j := i & (tinyKeys - 1)
				fs[pick[j]].Add(keys[j])
			}
		})
	}
}
