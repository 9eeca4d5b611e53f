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
	var (
		nFlag   = flag.String("n", "1e6,1e7", "comma-separated key counts `n` (initial capacity and keys added)")
		pFlag   = flag.String("p", "0.01,0.001", "comma-separated target false-positive rates `p`")
		reps    = flag.Int("reps", 5, "timed passes over each query set")
		addReps = flag.Int("addreps", 3, "timed Add rounds, each into fresh filters")
		queries = flag.Float64("queries", 2e6, "query keys per pass, half present and half absent")
		probes  = flag.Float64("probes", 1e6, "minimum never-inserted keys probed for the rate (at least 100/p are)")
		layout  = flag.String("layout", "", "our sub-filters' layout: blocked or classic (default: the library's)")
		seed    = flag.Uint64("seed", 1, "random seed for all key sets")
	)
	flag.Parse()
	ns, err := bench.ParseCounts(*nFlag)
	if err != nil {
		fail(err)
	}
	ps, err := bench.ParseRates(*pFlag)
	if err != nil {
		fail(err)
	}
	if *reps < 1 || *addReps < 1 || *queries < 2 {
		fail(fmt.Errorf("-reps and -addreps must be at least 1 and -queries at least 2"))
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
	for _, n := range ns {
		keys := bench.Keys(*seed, int(n))
		mixed, present := bench.Queries(*seed, keys, int(*queries))
		absent := absentOf(mixed)
		sets := [][][]byte{mixed, present, absent}
		for _, p := range ps {
			fmt.Fprintf(os.Stderr, "n=%s p=%g: adding\n", bench.FormatCount(n), p)
			libs, res := build(n, p, keys, *addReps, opts)
			fmt.Fprintf(os.Stderr, "n=%s p=%g: testing\n", bench.FormatCount(n), p)
			for i, l := range libs {
				r := res[i]
				if c := l.TestAll(present); c != len(present) {
					r.notes = append(r.notes, fmt.Sprintf("FALSE NEGATIVES: %d of %d", len(present)-c, len(present)))
				}
				if r.shape, err = l.Shape(); err != nil {
					fail(err)
				}
			}
			timeTests(libs, res, sets, *reps)
			count := bench.ProbeCount(p, uint64(*probes), 100, 0)
			bench.ProbeChunks(*seed, count, func(chunk []byte) {
				for i, l := range libs {
					res[i].fp += uint64(l.TestFlat(chunk))
				}
			})
			for _, r := range res {
				r.probes = count
			}
			all = append(all, res)
			libs = nil
			runtime.GC()
		}
	}
	fmt.Printf("\nKeys: 16 random bytes. Add: n keys in %d-key chunks, %d rounds into fresh filters. "+
		"Test: %d passes over %d queries (half present, half absent, shuffled), and over the present and the absent half alone. "+
		"Times are per key, medians over chunks; ratios are medians of the paired per-chunk ratios (ours / BoomFilters; below 1: ours faster).\n\n",
		bench.ChunkKeys, *addReps, *reps, int(*queries))
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
	step := bench.ChunkKeys * bench.KeySize
	for round := range rounds {
		clear(libs)
		runtime.GC()
		for i, name := range names {
			l, err := bench.NewScalableLib(name, n, p, bloom.ScalableOptions{}, opts...)
			if err != nil {
				fail(fmt.Errorf("%s n=%d p=%g: %w", name, n, p, err))
			}
			libs[i] = l
		}
		for c, off := 0, 0; off < len(keys); c, off = c+1, off+step {
			part := keys[off:min(off+step, len(keys))]
			for j := range libs {
				i := (round + c + j) % len(libs)
				var err error
				d := bench.Time(func() { err = libs[i].AddFlat(part) })
				if err != nil {
					fail(fmt.Errorf("%s n=%d p=%g: %w", names[i], n, p, err))
				}
				res[i].add = append(res[i].add, bench.PerOp(d, len(part)/bench.KeySize))
			}
		}
	}
	return libs, res
}

// timeTests times Test over each query set, chunk by chunk, both
// libraries back to back on each chunk. Every pass over a set must find
// the same number of positives.
func timeTests(libs []bench.ScalableLib, res []*result, sets [][][]byte, reps int) {
	chunk := 0
	for s, q := range sets {
		first := make([]int, len(libs))
		for rep := range reps {
			pass := make([]int, len(libs))
			for off := 0; off < len(q); off += bench.ChunkKeys {
				part := q[off:min(off+bench.ChunkKeys, len(q))]
				for j := range libs {
					i := (chunk + j) % len(libs)
					var c int
					d := bench.Time(func() { c = libs[i].TestAll(part) })
					res[i].test[s] = append(res[i].test[s], bench.PerOp(d, len(part)))
					pass[i] += c
				}
				chunk++
			}
			for i, c := range pass {
				sink += c
				if rep == 0 {
					first[i] = c
				} else if c != first[i] {
					res[i].notes = append(res[i].notes, "Test count varies between passes")
				}
			}
		}
	}
}

// absentOf returns the never-inserted keys of a query mix: those with the
// top bit of the first byte set (see bench.FillKeys).
func absentOf(q [][]byte) [][]byte {
	var out [][]byte
	for _, k := range q {
		if k[0]&0x80 != 0 {
			out = append(out, k)
		}
	}
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scalable:", err)
	os.Exit(2)
}
