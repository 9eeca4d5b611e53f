package bloom

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// Benchmarks of filter creation (docs/BENCHMARKS.md, "Filter creation
// (issue 11)"): the sizing and the allocation of a new filter, with the
// parameters a server repeats for every new key, with a fresh rate every
// call (nothing memoised can help), and over capacities from 1 to 1e9.

// freshRates returns a source of rates log-uniform in [1e-12, 0.5), each
// one new (a float64 drawn from 2^53 values never repeats in a run).
func freshRates() func() float64 {
	r := rand.New(rand.NewPCG(11, uint64(runtime.NumGoroutine())))
	lo, hi := math.Log(1e-12), math.Log(0.5)
	return func() float64 {
		for {
			if p := math.Exp(lo + (hi-lo)*r.Float64()); p >= 1e-12 && p < 0.5 {
				return p
			}
		}
	}
}

// warmTables sizes over the whole range of rates once, so that the block
// tables a fresh rate needs exist (they are built once per process, as a
// long-running server would have them; BenchmarkBlockTablesCold measures
// building them).
func warmTables() {
	for p := 0.5; p >= 1e-12; p *= 0.8 {
		for _, n := range []uint64{1, 100, 1e4, 1e9} {
			_, _ = Size(n, p, Blocked)
		}
	}
}

func BenchmarkNew(b *testing.B) {
	b.Run("n=100/p=0.01/repeated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := New(100, 0.01); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, layout := range []Layout{Blocked, Classic} {
		b.Run(layout.String()+"/n=100/fresh-p", func(b *testing.B) {
			warmTables()
			b.ReportAllocs()
			rate := freshRates()
			for b.Loop() {
				if _, err := New(100, rate(), WithLayout(layout)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNewScalable(b *testing.B) {
	so := Growth{RedisBloom: true}
	b.Run("n=100/p=0.01/redisbloom/repeated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewScalable(100, 0.01, WithGrowth(so)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("n=100/p=0.01/redisbloom-layout/repeated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewScalable(100, 0.01, WithLayout(RedisBloom)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("n=100/redisbloom-layout/fresh-p", func(b *testing.B) {
		b.ReportAllocs()
		rate := freshRates()
		for b.Loop() {
			if _, err := NewScalable(100, rate(), WithLayout(RedisBloom)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("n=100/redisbloom/fresh-p", func(b *testing.B) {
		warmTables()
		b.ReportAllocs()
		rate := freshRates()
		for b.Loop() {
			if _, err := NewScalable(100, rate(), WithGrowth(so)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSize sizes without allocating a filter, for capacities up to
// 1e9, with repeated and with fresh rates.
func BenchmarkSize(b *testing.B) {
	for _, layout := range []Layout{Blocked, Classic} {
		for _, n := range []uint64{1, 100, 1e4, 1e6, 1e9} {
			name := layout.String() + "/n=" + strconv.FormatFloat(float64(n), 'g', -1, 64)
			b.Run(name+"/p=0.01", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Size(n, 0.01, layout); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/fresh-p", func(b *testing.B) {
				warmTables()
				b.ReportAllocs()
				rate := freshRates()
				for b.Loop() {
					if _, err := Size(n, rate(), layout); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkBlockTablesCold is the one-time cost of the block tables that
// sizing at every rate from 0.5 to 1e-12 needs (what the first filters
// of a new process pay), and Size at one rate with cold tables.
func BenchmarkBlockTablesCold(b *testing.B) {
	b.Run("all-rates", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resetBlockTables()
			sizeCache.reset()
			warmTables()
		}
	})
	b.Run("n=100/p=0.01", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resetBlockTables()
			sizeCache.reset()
			if _, err := Size(100, 0.01, Blocked); err != nil {
				b.Fatal(err)
			}
		}
	})
	warmTables()
}

// resetBlockTables forgets every block table.
func resetBlockTables() {
	for k := range blockTables {
		bt := &blockTables[k]
		bt.mu.Lock()
		bt.snap.Store(nil)
		bt.dist, bt.pow, bt.hi = nil, nil, 0
		bt.mu.Unlock()
	}
}

// BenchmarkNewSizes allocates filters of 1 to 1e6 items (1e9 is left to
// BenchmarkSize: its bit array is gigabytes).
func BenchmarkNewSizes(b *testing.B) {
	for _, n := range []uint64{1, 100, 1e4, 1e6} {
		b.Run("n="+strconv.FormatFloat(float64(n), 'g', -1, 64)+"/p=0.01", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New(n, 0.01); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFootprint reports the Go heap bytes one small filter keeps
// alive (the HeapAlloc delta over 100,000 of them, after a GC), as a
// server keeps one per key: a default RedisBloom-mode Scalable (capacity
// 100, error 0.01: its first sub-filter classic), the same kept uniform
// (blocked, as one read from a file of format version 1), and a Filter
// of its first sub-filter's capacity and rate in either layout.
func BenchmarkFootprint(b *testing.B) {
	const count = 100_000
	cases := []struct {
		name string
		make func() (any, error)
	}{
		{"Scalable/n=100/p=0.01/redisbloom", func() (any, error) {
			return NewScalable(100, 0.01, WithRedisBloomSplit())
		}},
		{"Scalable/n=100/p=0.01/redisbloom/uniform", func() (any, error) {
			return NewScalable(100, 0.01, WithGrowth(Growth{RedisBloom: true, UniformLayout: true}))
		}},
		{"Filter/n=100/p=0.005", func() (any, error) { return New(100, 0.005) }},
		{"Filter/n=100/p=0.005/classic", func() (any, error) { return New(100, 0.005, WithLayout(Classic)) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			keep := make([]any, count)
			var perFilter float64
			for b.Loop() {
				clear(keep)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for i := range keep {
					f, err := c.make()
					if err != nil {
						b.Fatal(err)
					}
					keep[i] = f
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perFilter = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / count
			}
			runtime.KeepAlive(keep)
			b.ReportMetric(perFilter, "heap-B/filter")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkHeaderCheck is the cost of the geometry check the decoders run
// on every sub-filter header (Sizing.CheckRate), and of LoadScalableHeader
// on the dump header of a default RedisBloom-mode filter (what
// BF.LOADCHUNK's first chunk costs), with the block tables built.
func BenchmarkHeaderCheck(b *testing.B) {
	for _, layout := range []Layout{Blocked, Classic} {
		for _, p := range []float64{0.005, 1e-12} {
			s, err := Size(100, p, layout)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("CheckRate/"+layout.String()+"/p="+strconv.FormatFloat(p, 'g', -1, 64), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := s.CheckRate(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	s, err := NewScalable(100, 0.01, WithRedisBloomSplit())
	if err != nil {
		b.Fatal(err)
	}
	hdr := s.DumpHeader()
	b.Run("LoadScalableHeader/n=100/p=0.01/redisbloom", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := LoadScalableHeader(hdr); err != nil {
				b.Fatal(err)
			}
		}
	})
}
