package main

import (
	"fmt"
	"strings"

	"github.com/bloomery/bloom/bench"
)

// Goals of the issue, ours / BoomFilters.
const (
	goalTime   = 0.5  // Add and Test time
	goalMemory = 0.55 // bit-array bytes at exactly n
)

func printLibs(all [][]*result) {
	fmt.Println("| n | p | library | sub-filters | bytes | bits/key | items counted | items per sub-filter | Add ns/op | Add p25–p75 | Test ns/op (mix) | Test p25–p75 | Test present | Test absent | observed FP rate | 99% upper | FP / p | probes | notes |")
	fmt.Println("|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, res := range all {
		for _, r := range res {
			sh := r.shape
			sub := "–"
			if sh.SubItems != nil {
				sub = strings.Trim(fmt.Sprint(sh.SubItems), "[]")
			}
			fpr := float64(r.fp) / float64(r.probes)
			fmt.Printf("| %s | %g | %s | %d | %d | %.2f | %d | %s | %.1f | %s | %.1f | %s | %.1f | %.1f | %.3g | %.3g | %.2f | %d | %s |\n",
				bench.FormatCount(r.n), r.p, r.lib, sh.Filters, sh.Bytes, float64(sh.Bytes)*8/float64(r.n), sh.Items, sub,
				bench.Median(r.add), bench.FormatQuartiles(r.add), bench.Median(r.test[bench.SetMixed]), bench.FormatQuartiles(r.test[bench.SetMixed]),
				bench.Median(r.test[bench.SetPresent]), bench.Median(r.test[bench.SetAbsent]),
				fpr, bench.WilsonUpper(r.fp, r.probes, bench.Z99), fpr/r.p, r.probes, bench.JoinNotes(r.notes))
		}
	}
}

// printRatios prints ours / BoomFilters for time (median of the paired
// per-chunk ratios, with their quartiles) and memory, and which goals are
// met.
func printRatios(all [][]*result) {
	fmt.Printf("\nOurs / BoomFilters. Time: median of paired per-chunk ratios [p25–p75]. Goals: Add and Test ≤ %.2f, memory at n ≤ %.2f, our observed rate ≤ p.\n\n", goalTime, goalMemory)
	fmt.Println("| n | p | Add | Test (mix) | Test present | Test absent | memory at n | sub-filters | ours FP / p | BoomFilters FP / p | goals missed |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, res := range all {
		o, b := res[0], res[1] // bench.ScalableLibNames order: ours, BoomFilters
		add := bench.PairedRatios(o.add, b.add)
		var test [3][]float64
		for s := range test {
			test[s] = bench.PairedRatios(o.test[s], b.test[s])
		}
		mem := float64(o.shape.Bytes) / float64(b.shape.Bytes)
		ofp := float64(o.fp) / float64(o.probes) / o.p
		bfp := float64(b.fp) / float64(b.probes) / b.p
		var missed []string
		if bench.Median(add) > goalTime {
			missed = append(missed, "Add")
		}
		if bench.Median(test[bench.SetMixed]) > goalTime {
			missed = append(missed, "Test")
		}
		if mem > goalMemory {
			missed = append(missed, "memory")
		}
		if ofp > 1 {
			missed = append(missed, "rate")
		}
		if len(missed) == 0 {
			missed = []string{"none"}
		}
		fmt.Printf("| %s | %g | %s | %s | %s | %s | %.3f | %d / %d | %.2f | %.2f | %s |\n",
			bench.FormatCount(o.n), o.p, bench.FormatRatio(add), bench.FormatRatio(test[bench.SetMixed]), bench.FormatRatio(test[bench.SetPresent]), bench.FormatRatio(test[bench.SetAbsent]),
			mem, o.shape.Filters, b.shape.Filters, ofp, bfp, strings.Join(missed, ", "))
	}
}
