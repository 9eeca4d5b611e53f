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

// TimeChunks times run over keys [0, total) cut into ChunkKeys-sized
// chunks: for each chunk it calls run(lib, lo, hi) for every one of libs
// libraries back to back, library (first+chunk+j) % libs j-th, so the one
// that goes first rotates, and calls record(lib, ns) with that call's time
// per key. It returns the number of chunks, which callers that time many
// passes add to first so that the rotation goes on across passes.
func TimeChunks(libs, total, first int, run func(lib, lo, hi int), record func(lib int, ns float64)) int {
	chunks := 0
	for lo := 0; lo < total; lo += ChunkKeys {
		hi := min(lo+ChunkKeys, total)
		for j := range libs {
			i := (first + chunks + j) % libs
			record(i, PerOp(Time(func() { run(i, lo, hi) }), hi-lo))
		}
		chunks++
	}
	return chunks
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

// Tester is an adapter with a one-key-per-call membership test (TestAll
// of ScalableLib and CountingLib).
type Tester interface {
	// TestAll returns how many of keys test positive.
	TestAll(keys [][]byte) int
}

// TimeTestPasses times reps passes of TestAll over each of sets, chunk by
// chunk with the libraries back to back (TimeChunks), the first library
// rotating on across sets and passes. times[s][i] holds library i's
// per-chunk ns/key over set s, positives[i] its positives over all passes,
// and varies[i] whether two passes over one set counted differently.
func TimeTestPasses[T Tester](libs []T, sets [][][]byte, reps int) (times [][][]float64, positives []int, varies []bool) {
	times = make([][][]float64, len(sets))
	positives, varies = make([]int, len(libs)), make([]bool, len(libs))
	chunk := 0
	for s, q := range sets {
		times[s] = make([][]float64, len(libs))
		first := make([]int, len(libs))
		for rep := range reps {
			pass := make([]int, len(libs))
			chunk += TimeChunks(len(libs), len(q), chunk, func(i, lo, hi int) {
				pass[i] += libs[i].TestAll(q[lo:hi])
			}, func(i int, ns float64) { times[s][i] = append(times[s][i], ns) })
			for i, c := range pass {
				positives[i] += c
				if rep == 0 {
					first[i] = c
				} else if c != first[i] {
					varies[i] = true
				}
			}
		}
	}
	return times, positives, varies
}

// ProbeFalsePositives tests count never-inserted keys (ProbeChunks of
// seed) against every library and returns each one's positives.
func ProbeFalsePositives[T Tester](libs []T, seed, count uint64) []uint64 {
	fp := make([]uint64, len(libs))
	ProbeChunks(seed, count, func(chunk []byte) {
		keys := Split(chunk)
		for i, l := range libs {
			fp[i] += uint64(l.TestAll(keys))
		}
	})
	return fp
}
