// Command scalable benchmarks bloom.Scalable against the scalable Bloom
// filter of github.com/tylertreat/BoomFilters in one process and one run.
// Both are told the same initial capacity n and rate p and are filled with
// exactly n keys. Add and Test are timed chunk by chunk, the two libraries
// back to back on the same chunk, and ratios are medians of the paired
// per-chunk ratios. It also reports sub-filters and bit-array memory at
// exactly n, and the false-positive rate observed on never-inserted keys.
// See ../../README.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/bench"
)

var sink int // every counted result ends up here, so no call can be dropped

func main() {
	f := bench.NewPairFlags("initial capacity and keys added")
	addReps := flag.Int("addreps", 3, "timed Add rounds, each into fresh filters")
	layout := flag.String("layout", "", "our sub-filters' layout: blocked or classic (default: the library's)")
	flag.Parse()
	if err := f.Parse(); err != nil {
		fail(err)
	}
	if *addReps < 1 {
		fail(fmt.Errorf("-addreps must be at least 1"))
	}
	var opts []bloom.Option
	switch *layout {
	case "":
	case "blocked":
		opts = append(opts, bloom.WithLayout(bloom.Blocked))
	case "classic":
		opts = append(opts, bloom.WithLayout(bloom.Classic))
	default:
		fail(fmt.Errorf("bad -layout %q", *layout))
	}

	bench.PrintEnv("github.com/tylertreat/BoomFilters")
	var all [][]*result
	for _, n := range f.Ns {
		keys := bench.Keys(f.Seed, int(n))
		sets := bench.QuerySets(f.Seed, keys, f.Queries)
		present := sets[bench.SetPresent]
		for _, p := range f.Ps {
			fmt.Fprintf(os.Stderr, "n=%s p=%g: adding\n", bench.FormatCount(n), p)
			libs, res := build(n, p, keys, *addReps, opts)
			fmt.Fprintf(os.Stderr, "n=%s p=%g: testing\n", bench.FormatCount(n), p)
			for i, l := range libs {
				r := res[i]
				if c := l.TestAll(present); c != len(present) {
					r.notes = append(r.notes, fmt.Sprintf("FALSE NEGATIVES: %d of %d", len(present)-c, len(present)))
				}
				var err error
				if r.shape, err = l.Shape(); err != nil {
					fail(err)
				}
			}
			timeTests(libs, res, sets, f.Reps)
			count := bench.ProbeCount(p, f.Probes, 100, 0)
			fp := bench.ProbeFalsePositives(libs, f.Seed, count)
			for i, r := range res {
				r.fp, r.probes = fp[i], count
			}
			all = append(all, res)
			libs = nil
			runtime.GC()
		}
	}
	fmt.Printf("\nKeys: 16 random bytes. Add: n keys in %d-key chunks, %d rounds into fresh filters. "+
		"Test: %d passes over %d queries (half present, half absent, shuffled), and over the present and the absent half alone. "+
		"Times are per key, medians over chunks; ratios are medians of the paired per-chunk ratios (ours / BoomFilters; below 1: ours faster).\n\n",
		bench.ChunkKeys, *addReps, f.Reps, f.Queries)
	printLibs(all)
	printRatios(all)
	fmt.Printf("\n(result checksum %d)\n", sink)
}

// result is one library's numbers for one (n, p).
type result struct {
	n      uint64
	p      float64
	lib    string
	add    []float64    // Add ns/op per chunk, all rounds
	test   [3][]float64 // Test ns/op per chunk: mixed, present, absent
	shape  bench.ScalableShape
	fp     uint64
	probes uint64
	notes  []string
}

// build times Add of all keys chunk by chunk, both filters growing
// together and the library that goes first alternating; with rounds > 1 it
// starts over with fresh filters, keeping the last round's.
func build(n uint64, p float64, keys []byte, rounds int, opts []bloom.Option) ([]bench.ScalableLib, []*result) {
	names := bench.ScalableLibNames
	libs := make([]bench.ScalableLib, len(names))
	res := make([]*result, len(names))
	for i, name := range names {
		res[i] = &result{n: n, p: p, lib: name}
	}
	for round := range rounds {
		clear(libs)
		runtime.GC()
		for i, name := range names {
			l, err := bench.NewScalableLib(name, n, p, bloom.Growth{}, opts...)
			if err != nil {
				fail(fmt.Errorf("%s n=%d p=%g: %w", name, n, p, err))
			}
			libs[i] = l
		}
		bench.TimeChunks(len(libs), int(n), round, func(i, lo, hi int) {
			if err := libs[i].AddFlat(keys[lo*bench.KeySize : hi*bench.KeySize]); err != nil {
				fail(fmt.Errorf("%s n=%d p=%g: %w", names[i], n, p, err))
			}
		}, func(i int, ns float64) { res[i].add = append(res[i].add, ns) })
	}
	return libs, res
}

// timeTests times Test over each query set, chunk by chunk, both
// libraries back to back on each chunk (bench.TimeTestPasses). Every pass
// over a set must find the same number of positives.
func timeTests(libs []bench.ScalableLib, res []*result, sets [][][]byte, reps int) {
	times, positives, varies := bench.TimeTestPasses(libs, sets, reps)
	for i, r := range res {
		for s := range sets {
			r.test[s] = append(r.test[s], times[s][i]...)
		}
		sink += positives[i]
		if varies[i] {
			r.notes = append(r.notes, "Test count varies between passes")
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scalable:", err)
	os.Exit(2)
}
