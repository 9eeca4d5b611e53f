// Command counting benchmarks bloom.Counting against the counting Bloom
// filter of github.com/tylertreat/BoomFilters in one process and one run.
// Both are sized for the same n and rate p, with 4-bit counters, and are
// filled with exactly n keys. Add, Test and Remove are timed chunk by
// chunk, the two libraries back to back on the same chunk, and ratios are
// medians of the paired per-chunk ratios. It also reports the bytes of
// both counter arrays and the false-positive rate observed on
// never-inserted keys. See ../../README.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/bloomery/bloom/bench"
)

var sink int // every counted result ends up here, so no call can be dropped

func main() {
	f := bench.NewPairFlags("capacity and keys added")
	rounds := flag.Int("rounds", 3, "timed Add-then-Remove rounds, each into fresh filters")
	flag.Parse()
	if err := f.Parse(); err != nil {
		fail(err)
	}
	if *rounds < 1 {
		fail(fmt.Errorf("-rounds must be at least 1"))
	}

	bench.PrintEnv("github.com/tylertreat/BoomFilters")
	var all [][]*result
	for _, n := range f.Ns {
		keys := bench.Keys(f.Seed, int(n))
		q := querySets{sets: bench.QuerySets(f.Seed, keys, f.Queries), reps: f.Reps, seed: f.Seed}
		for _, p := range f.Ps {
			q.probes = bench.ProbeCount(p, f.Probes, 100, 0)
			all = append(all, run(n, p, keys, q, *rounds))
			runtime.GC()
		}
	}
	fmt.Printf("\nKeys: 16 random bytes. Each of %d rounds: fresh filters, Add of the n keys, Remove of the n keys, both in %d-key chunks. "+
		"Test (after the first round's Adds): %d passes over %d queries (half present, half absent, shuffled), and over the present and the absent half alone. "+
		"Times are per key, medians over chunks; ratios are medians of the paired per-chunk ratios (ours / BoomFilters; below 1: ours faster).\n\n",
		*rounds, bench.ChunkKeys, f.Reps, f.Queries)
	printLibs(all)
	printRatios(all)
	fmt.Printf("\n(result checksum %d)\n", sink)
}

// querySets are the Test sets (bench.QuerySets) and the probing
// of never-inserted keys.
type querySets struct {
	sets   [][][]byte
	reps   int
	seed   uint64
	probes uint64
}

// result is one library's numbers for one (n, p).
type result struct {
	n        uint64
	p        float64
	lib      string
	k        uint
	counters uint64
	bytes    uint64
	add      []float64    // Add ns/op per chunk, all rounds
	remove   []float64    // Remove ns/op per chunk, all rounds
	test     [3][]float64 // Test ns/op per chunk: mixed, present, absent
	left     int          // present queries still positive after removing all n keys
	fp       uint64
	probes   uint64
	notes    []string
}

// run does rounds of: fresh filters, timed Add of all keys, and timed
// Remove of all keys. In the first round, between the two, it checks for
// false negatives, reads the sizes, times Test and probes for the rate.
func run(n uint64, p float64, keys []byte, q querySets, rounds int) []*result {
	names := bench.CountingLibNames
	res := make([]*result, len(names))
	for i, name := range names {
		res[i] = &result{n: n, p: p, lib: name, probes: q.probes}
	}
	step := func(what string) { fmt.Fprintf(os.Stderr, "n=%s p=%g: %s\n", bench.FormatCount(n), p, what) }
	present := q.sets[bench.SetPresent]
	for round := range rounds {
		runtime.GC()
		libs := make([]bench.CountingLib, len(names))
		for i, name := range names {
			l, err := bench.NewCountingLib(name, n, p)
			if err != nil {
				fail(fmt.Errorf("%s n=%d p=%g: %w", name, n, p, err))
			}
			libs[i] = l
		}
		step(fmt.Sprintf("round %d: adding", round+1))
		bench.TimeChunks(len(libs), int(n), round, func(i, lo, hi int) {
			libs[i].AddFlat(keys[lo*bench.KeySize : hi*bench.KeySize])
		}, func(i int, ns float64) { res[i].add = append(res[i].add, ns) })
		if round == 0 {
			step("testing")
			measure(libs, res, q)
		}
		step(fmt.Sprintf("round %d: removing", round+1))
		removed := make([]int, len(libs))
		bench.TimeChunks(len(libs), int(n), round+1, func(i, lo, hi int) {
			removed[i] += libs[i].RemoveFlat(keys[lo*bench.KeySize : hi*bench.KeySize])
		}, func(i int, ns float64) { res[i].remove = append(res[i].remove, ns) })
		for i, r := range res {
			sink += removed[i]
			if removed[i] != int(n) {
				r.notes = append(r.notes, fmt.Sprintf("Remove reported %d of %d added keys absent", int(n)-removed[i], n))
			}
			if round == 0 {
				r.left = libs[i].TestAll(present)
			}
		}
	}
	return res
}

// measure checks that every present query tests positive, reads each
// filter's size, times Test over the query sets and counts false
// positives over never-inserted keys.
func measure(libs []bench.CountingLib, res []*result, q querySets) {
	present := q.sets[bench.SetPresent]
	for i, l := range libs {
		r := res[i]
		if c := l.TestAll(present); c != len(present) {
			r.notes = append(r.notes, fmt.Sprintf("FALSE NEGATIVES: %d of %d", len(present)-c, len(present)))
		}
		var err error
		if r.bytes, err = l.Bytes(); err != nil {
			fail(err)
		}
		r.k, r.counters = l.K(), l.Counters()
	}
	times, positives, varies := bench.TimeTestPasses(libs, q.sets, q.reps)
	for i, r := range res {
		for s := range q.sets {
			r.test[s] = times[s][i]
		}
		sink += positives[i]
		if varies[i] {
			r.notes = append(r.notes, "Test count varies between passes")
		}
	}
	for i, fp := range bench.ProbeFalsePositives(libs, q.seed, q.probes) {
		res[i].fp = fp
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "counting:", err)
	os.Exit(2)
}
