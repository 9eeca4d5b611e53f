package bench

import (
	"math"
	"slices"
	"time"
)

// ChunkKeys is the timing unit of the commands: every library is timed on
// the same chunk of keys back to back, in rotating order, before the next
// chunk. Noise on a shared machine comes in bursts longer than a chunk
// (about a millisecond), so a burst hits the libraries of one chunk alike,
// and ratios are taken chunk by chunk (paired) before the median.
const ChunkKeys = 1 << 16

// Time returns how long f takes.
func Time(f func()) time.Duration {
	t := time.Now()
	f()
	return time.Since(t)
}

// PerOp is d in nanoseconds per operation.
func PerOp(d time.Duration, ops int) float64 { return float64(d.Nanoseconds()) / float64(ops) }

// PairedRatios returns xs[i]/ys[i] for per-chunk times of two libraries
// on the same chunks (nil when the lengths differ); the reported ratio is
// their Median.
func PairedRatios(xs, ys []float64) []float64 {
	if len(xs) != len(ys) {
		return nil
	}
	rs := make([]float64, len(xs))
	for i := range xs {
		rs[i] = xs[i] / ys[i]
	}
	return rs
}

// Percentile returns the q-quantile (0..1) of xs, nearest rank.
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// ProbeChunks makes count never-inserted keys (stream StreamProbes of
// seed) ChunkKeys at a time in one reused buffer, so that no probe set has
// to be held in memory, and calls visit with each flat chunk.
func ProbeChunks(seed, count uint64, visit func(chunk []byte)) {
	r := NewRand(seed, StreamProbes)
	buf := make([]byte, ChunkKeys*KeySize)
	for done := uint64(0); done < count; {
		chunk := buf[:min(ChunkKeys, count-done)*KeySize]
		FillKeys(r, chunk, true)
		visit(chunk)
		done += uint64(len(chunk) / KeySize)
	}
}
