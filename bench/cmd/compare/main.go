// Command compare benchmarks github.com/bloomery/bloom against
// github.com/greatroar/blobloom and github.com/bits-and-blooms/bloom/v3 in
// one process and one run, interleaving the libraries rep by rep so that
// machine noise hits them alike, and prints markdown tables: Add, Test and
// TestMany time per key (medians over reps), bits per key, and the
// false-positive rate observed on never-inserted keys with a 99% upper
// bound. With -rateonly it measures only bits per key and the observed
// rate, for small target rates. See ../../README.md.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/bloomery/bloom/bench"
)

var sink int // every counted result ends up here, so no call can be dropped

func main() {
	var (
		nFlag     = flag.String("n", "1e6,1e7", "comma-separated key counts `n`")
		pFlag     = flag.String("p", "0.01,0.001", "comma-separated target false-positive rates `p`")
		reps      = flag.Int("reps", 5, "timed repetitions of the query passes; medians are reported")
		addReps   = flag.Int("addreps", 1, "timed Add rounds, each into fresh filters, chunk by chunk")
		queries   = flag.Float64("queries", 2e6, "query keys per pass, half present and half absent")
		batch     = flag.Int("batch", 256, "keys per TestMany call")
		minProbes = flag.Float64("fprprobes", 1e6, "minimum never-inserted keys probed for the false-positive rate")
		expectFP  = flag.Float64("fprexpect", 100, "probe at least this many over p keys (about this many false positives expected)")
		maxProbes = flag.Float64("maxprobes", 1e8, "cap on the probe count (0: no cap)")
		libsFlag  = flag.String("libs", "all", "comma-separated libraries: all or "+strings.Join(bench.LibNames, ","))
		seed      = flag.Uint64("seed", 1, "random seed for all key sets")
		rateOnly  = flag.Bool("rateonly", false, "only measure bits/key and observed rate, for -ratep at -raten")
		rateN     = flag.Float64("raten", 1e6, "key count for -rateonly")
		rateP     = flag.String("ratep", "1e-4,1e-5", "comma-separated target rates for -rateonly")
	)
	flag.Parse()

	libs := bench.LibNames
	if *libsFlag != "all" {
		libs = strings.Split(*libsFlag, ",")
	}
	for _, name := range libs {
		if _, err := bench.NewLib(name, 1, 0.5); err != nil {
			fail(err)
		}
	}
	if *reps < 1 || *addReps < 1 || *batch < 1 || *queries < 2 {
		fail(fmt.Errorf("-reps, -addreps, -batch must be at least 1 and -queries at least 2"))
	}
	probes := func(p float64) uint64 {
		return bench.ProbeCount(p, uint64(*minProbes), uint64(*expectFP), uint64(*maxProbes))
	}

	bench.PrintEnv("github.com/bits-and-blooms/bloom/v3", "github.com/greatroar/blobloom", "github.com/cespare/xxhash/v2")
	if *rateOnly {
		n, err := bench.ParseCount(strconv.FormatFloat(*rateN, 'g', -1, 64))
		if err != nil {
			fail(err)
		}
		runRates(libs, n, mustRates(*rateP), probes, *seed)
	} else {
		ns, err := bench.ParseCounts(*nFlag)
		if err != nil {
			fail(err)
		}
		runCompare(libs, ns, mustRates(*pFlag), *reps, *addReps, int(*queries), *batch, probes, *seed)
	}
}

// result is one library's numbers for one (n, p).
type result struct {
	n          uint64
	p          float64
	lib        string
	bitsPerKey float64
	k          string
	add        []float64 // Add ns/op per round
	test       []float64 // Test ns/op per chunk, caller branches on each result
	testNB     []float64 // Test ns/op per chunk, branch-free caller (counts results)
	testMany   []float64 // TestMany ns/op per rep; nil when unsupported
	fp, probes uint64
	notes      []string
}

func runCompare(names []string, ns []uint64, ps []float64, reps, addReps, queries, batch int, probes func(float64) uint64, seed uint64) {
	var all []*result
	for _, n := range ns {
		keys := bench.Keys(seed, int(n))
		q, present := bench.Queries(seed, keys, queries)
		for _, p := range ps {
			fmt.Fprintf(os.Stderr, "n=%s p=%g: building\n", bench.FormatCount(n), p)
			libs, res := build(names, n, p, keys, addReps)
			for i, l := range libs {
				if c := l.TestAll(present); c != len(present) {
					res[i].notes = append(res[i].notes, fmt.Sprintf("FALSE NEGATIVES: %d of %d", len(present)-c, len(present)))
				}
			}
			fmt.Fprintf(os.Stderr, "n=%s p=%g: %d reps\n", bench.FormatCount(n), p, reps)
			timeQueries(libs, res, q, reps, batch)
			runtime.GC()
			fmt.Fprintf(os.Stderr, "n=%s p=%g: %d probes\n", bench.FormatCount(n), p, probes(p))
			countFP(libs, res, probes(p), seed)
			all = append(all, res...)
			libs = nil
			runtime.GC()
		}
		runtime.GC()
	}
	fmt.Printf("\nQueries per pass: %d (half present, half absent, shuffled); TestMany batch: %d; "+
		"query reps: %d, Add rounds: %d. Times are per key, medians over %d-key chunks; "+
		"every library is timed on the same chunk back to back.\n\n", queries, batch, reps, addReps, bench.ChunkKeys)
	printResults(all)
	printRatios(all)
	fmt.Printf("\n(result checksum %d)\n", sink)
}

// timeQueries times Test (branching and branch-free callers) and TestMany
// where supported, chunk by chunk.
func timeQueries(libs []bench.Lib, res []*result, q [][]byte, reps, batch int) {
	counts := make([][]int, len(libs)) // per lib, per rep
	for i := range counts {
		counts[i] = make([]int, reps)
	}
	chunk := 0
	for rep := range reps {
		for off := 0; off < len(q); off += bench.ChunkKeys {
			part := q[off:min(off+bench.ChunkKeys, len(q))]
			for j := range libs {
				i := (chunk + j) % len(libs) // rotate who goes first
				l, r := libs[i], res[i]
				var c, cn int
				d := bench.Time(func() { c = l.TestAll(part) })
				r.test = append(r.test, bench.PerOp(d, len(part)))
				d = bench.Time(func() { cn = l.TestCount(part) })
				r.testNB = append(r.testNB, bench.PerOp(d, len(part)))
				if cn != c {
					r.notes = append(r.notes, fmt.Sprintf("TestCount found %d, Test %d", cn, c))
				}
				counts[i][rep] += c
				sink += c + cn
				if b, ok := l.(bench.Batcher); ok {
					var cm int
					d = bench.Time(func() { cm = b.TestBatched(part, batch) })
					r.testMany = append(r.testMany, bench.PerOp(d, len(part)))
					if cm != c {
						r.notes = append(r.notes, fmt.Sprintf("TestMany found %d, Test %d", cm, c))
					}
					sink += cm
				}
			}
			chunk++
		}
	}
	for i := range libs {
		for _, c := range counts[i] {
			if c != counts[i][0] {
				res[i].notes = append(res[i].notes, "Test count varies between reps")
			}
		}
	}
}

// build makes one filter per library and times Add chunk by chunk, all
// filters growing together; with addRounds > 1 it starts over with fresh
// filters, keeping the last round's.
func build(names []string, n uint64, p float64, keys []byte, addRounds int) ([]bench.Lib, []*result) {
	libs := make([]bench.Lib, len(names))
	res := make([]*result, len(names))
	for round := range addRounds {
		for i := range names {
			libs[i] = nil
		}
		runtime.GC()
		for i, name := range names {
			l, err := bench.NewLib(name, n, p)
			if err != nil {
				fail(fmt.Errorf("%s n=%d p=%g: %w", name, n, p, err))
			}
			libs[i] = l
			if res[i] == nil {
				res[i] = &result{n: n, p: p, lib: name, k: l.K(), bitsPerKey: float64(l.Bits()) / float64(n)}
			}
		}
		step := bench.ChunkKeys * bench.KeySize
		for c, off := 0, 0; off < len(keys); c, off = c+1, off+step {
			part := keys[off:min(off+step, len(keys))]
			for j := range libs {
				i := (round + c + j) % len(libs)
				d := bench.Time(func() { libs[i].AddFlat(part) })
				res[i].add = append(res[i].add, bench.PerOp(d, len(part)/bench.KeySize))
			}
		}
	}
	return libs, res
}

// countFP probes every library with the same never-inserted keys, made
// chunk by chunk so that no probe set has to be held in memory.
func countFP(libs []bench.Lib, res []*result, probes uint64, seed uint64) {
	bench.ProbeChunks(seed, probes, func(chunk []byte) {
		for i, l := range libs {
			res[i].fp += uint64(l.TestFlat(chunk))
		}
	})
	for _, r := range res {
		r.probes = probes
	}
}

func runRates(names []string, n uint64, ps []float64, probes func(float64) uint64, seed uint64) {
	keys := bench.Keys(seed, int(n))
	fmt.Println("\n| n | target p | library | bits/key | k | probes | false pos. | observed rate | 99% upper (Wilson) | observed/target |")
	fmt.Println("|---|---|---|---:|---|---:|---:|---:|---:|---:|")
	for _, p := range ps {
		fmt.Fprintf(os.Stderr, "rate n=%s p=%g: %d probes\n", bench.FormatCount(n), p, probes(p))
		libs, res := build(names, n, p, keys, 1)
		countFP(libs, res, probes(p), seed)
		for _, r := range res {
			obs := float64(r.fp) / float64(r.probes)
			fmt.Printf("| %s | %g | %s | %.2f | %s | %d | %d | %.3g | %.3g | %.2f |\n",
				bench.FormatCount(n), p, r.lib, r.bitsPerKey, r.k, r.probes, r.fp, obs,
				bench.WilsonUpper(r.fp, r.probes, bench.Z99), obs/p)
		}
	}
}

func printResults(all []*result) {
	fmt.Println("| n | p | library | bits/key | k | Add ns/op | Test ns/op | Test p25–p75 | Test, branch-free caller | TestMany ns/op | observed FP rate | 99% upper | probes | notes |")
	fmt.Println("|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range all {
		lo, hi := bench.Percentile(r.test, 0.25), bench.Percentile(r.test, 0.75)
		tm := "–"
		if r.testMany != nil {
			tm = fmt.Sprintf("%.1f", bench.Median(r.testMany))
		}
		fmt.Printf("| %s | %g | %s | %.2f | %s | %.1f | %.1f | %.1f–%.1f | %.1f | %s | %.3g | %.3g | %d | %s |\n",
			bench.FormatCount(r.n), r.p, r.lib, r.bitsPerKey, r.k, bench.Median(r.add), bench.Median(r.test), lo, hi, bench.Median(r.testNB), tm,
			float64(r.fp)/float64(r.probes), bench.WilsonUpper(r.fp, r.probes, bench.Z99), r.probes,
			bench.JoinNotes(r.notes))
	}
}

// printRatios prints ours/peer time ratios per (n, p); below 1 means ours
// is faster.
func printRatios(all []*result) {
	type key struct {
		n uint64
		p float64
	}
	by := map[key]map[string]*result{}
	var order []key
	for _, r := range all {
		k := key{r.n, r.p}
		if by[k] == nil {
			by[k] = map[string]*result{}
			order = append(order, k)
		}
		by[k][r.lib] = r
	}
	fmt.Println("\nRatios ours (bloomery, blocked) / peer: median over chunks of the paired per-chunk ratio; below 1 means ours is faster.")
	fmt.Println()
	fmt.Println("| n | p | Test / blobloom | Test / bits-and-blooms | Test (branch-free caller) / blobloom | Add / blobloom | Add / bits-and-blooms | AddMany / blobloom Add | TestMany / blobloom Test | TestMany / bits-and-blooms Test | floor Test / blobloom | Add / floor-add | blobloom Add / floor-add |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, k := range order {
		m := by[k]
		o, bl, bb := m[bench.Ours], m[bench.Blobloom], m[bench.BitsBlooms]
		// ratio is the median over chunks of ours/peer for paired samples.
		ratio := func(a, b func(*result) []float64, x *result) string {
			if o == nil || x == nil {
				return "–"
			}
			r := bench.Median(bench.PairedRatios(a(o), b(x)))
			if math.IsNaN(r) {
				return "–"
			}
			return fmt.Sprintf("%.2f", r)
		}
		add := func(r *result) []float64 { return r.add }
		test := func(r *result) []float64 { return r.test }
		testNB := func(r *result) []float64 { return r.testNB }
		many := func(r *result) []float64 { return r.testMany }
		ratioOf := func(x *result, a, b func(*result) []float64, y *result) string {
			saved := o
			o = x
			defer func() { o = saved }()
			return ratio(a, b, y)
		}
		fmt.Printf("| %s | %g | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", bench.FormatCount(k.n), k.p,
			ratio(test, test, bl), ratio(test, test, bb), ratio(testNB, testNB, bl), ratio(add, add, bl), ratio(add, add, bb),
			ratioOf(m[bench.OursMany], add, add, bl),
			ratio(many, test, bl), ratio(many, test, bb), ratioOf(m[bench.Floor], test, test, bl),
			ratio(add, add, m[bench.FloorAdd]), ratioOf(bl, add, add, m[bench.FloorAdd]))
	}
}

func mustRates(s string) []float64 {
	ps, err := bench.ParseRates(s)
	if err != nil {
		fail(err)
	}
	return ps
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "compare:", err)
	os.Exit(2)
}
