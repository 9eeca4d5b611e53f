package guard

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkGetCached compares Get of a present, cached ID with the cache
// alone (the same MemoryCache, Get only): the filter test and the
// counters are the guard's whole overhead on a hit. Run side by side:
//
//	go test -run '^$' -bench 'GetCached' -count 10 ./guard
func BenchmarkGetCached(b *testing.B) {
	const n = 1_000_000
	src := newSource(n)
	for _, m := range []struct {
		name string
		m    func() Membership
	}{
		{"keyed", func() Membership { return NewMemory() }},
	} {
		g, err := New(context.Background(), src.options(m.m()))
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, 1024)
		for i := range ids {
			ids[i] = "row" + strconv.Itoa(i*977)
			if _, err := g.Get(context.Background(), ids[i]); err != nil {
				b.Fatal(err)
			}
		}
		cache := g.cache.(*MemoryCache[string])
		ctx := context.Background()
		b.Run("cache", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, ok, _ := cache.Get(ctx, ids[i&1023]); !ok {
					b.Fatal("miss")
				}
			}
		})
		b.Run("guard-"+m.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := g.Get(ctx, ids[i&1023]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("cache-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					cache.Get(ctx, ids[i&1023])
				}
			})
		})
		b.Run("guard-"+m.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					g.Get(ctx, ids[i&1023])
				}
			})
		})
		g.Close()
	}
}

// BenchmarkGetCachedRatio times Get of present, cached IDs against the
// cache alone in alternating blocks of 4096 calls (which goes first
// alternates too), so that the machine's drift hits both alike, and
// reports their ratio (the bound: 1.1). "one" repeats one ID, as
// a hot key; "4096" cycles through 4096.
func BenchmarkGetCachedRatio(b *testing.B) {
	src := newSource(1_000_000)
	g, err := New(context.Background(), src.options(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	cache := g.cache.(*MemoryCache[string])
	for _, n := range []int{1, 4096} {
		ids := make([]string, 4096)
		for i := range ids {
			ids[i] = "row" + strconv.Itoa(i%n*241)
			g.Get(ctx, ids[i])
		}
		name := "one"
		if n > 1 {
			name = strconv.Itoa(n)
		}
		b.Run(name, func(b *testing.B) {
			var tc, tg time.Duration
			cacheBlock := func() {
				start := time.Now()
				for _, id := range ids {
					cache.Get(ctx, id)
				}
				tc += time.Since(start)
			}
			guardBlock := func() {
				start := time.Now()
				for _, id := range ids {
					g.Get(ctx, id)
				}
				tg += time.Since(start)
			}
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					cacheBlock()
					guardBlock()
				} else {
					guardBlock()
					cacheBlock()
				}
			}
			calls := float64(b.N) * float64(len(ids))
			b.ReportMetric(float64(tc.Nanoseconds())/calls, "ns/cache-get")
			b.ReportMetric(float64(tg.Nanoseconds())/calls, "ns/guard-get")
			b.ReportMetric(float64(tg)/float64(tc), "guard/cache")
			b.ReportMetric(0, "ns/op")
		})
	}
}
