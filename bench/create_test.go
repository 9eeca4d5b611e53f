package bench

import (
	"math"
	"math/rand/v2"
	"testing"

	bitsbloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/bloomery/bloom"
	"github.com/greatroar/blobloom"
	boom "github.com/tylertreat/BoomFilters"
)

// BenchmarkCreate is the cost of creating one small filter (capacity 100,
// rate 0.01: RedisBloom's defaults, what a server pays per new key), ours
// and the peers', with the same parameters every time and with a fresh
// rate every time (log-uniform in [1e-12, 0.5): nothing memoised helps).
// The figures are in docs/BENCHMARKS.md, "Filter creation (issue 11)".
func BenchmarkCreate(b *testing.B) {
	const n = 100
	type maker func(p float64) any
	libs := []struct {
		name string
		make maker
	}{
		{"bloomery/New", func(p float64) any { f, _ := bloom.New(n, p); return f }},
		{"bloomery/NewScalable-redisbloom", func(p float64) any {
			f, _ := bloom.NewScalable(n, p, bloom.WithRedisBloomSplit())
			return f
		}},
		{Blobloom, func(p float64) any { return blobloom.NewOptimized(blobloom.Config{Capacity: n, FPRate: p}) }},
		{BitsBlooms, func(p float64) any { return bitsbloom.NewWithEstimates(n, p) }},
		{"boomfilters/scalable", func(p float64) any { return boom.NewScalableBloomFilter(n, p, BoomTightening) }},
	}
	for _, lib := range libs {
		b.Run(lib.name+"/p=0.01", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchSink += len(lib.name) * b2i(lib.make(0.01) != nil)
			}
		})
		b.Run(lib.name+"/fresh-p", func(b *testing.B) {
			r := rand.New(rand.NewPCG(11, 24))
			lo, hi := math.Log(1e-12), math.Log(0.5)
			for range 200 { // build the block tables a long-running process has
				lib.make(math.Exp(lo + (hi-lo)*r.Float64()))
			}
			b.ReportAllocs()
			for b.Loop() {
				benchSink += b2i(lib.make(math.Exp(lo+(hi-lo)*r.Float64())) != nil)
			}
		})
	}
}
