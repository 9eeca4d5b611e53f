package main

import (
	"fmt"
	"strings"

	"github.com/bloomery/bloom/bench"
)

// Goals of the issue, ours / BoomFilters.
const (
	goalTime   = 0.5 // Add, Test and Remove time
	goalMemory = 1.0 // counter-array bytes at the same n and p
)

func printLibs(all [][]*result) {
	fmt.Println("| n | p | library | k | counters | bytes | bits/key | Add ns/op | Add p25–p75 | Test ns/op (mix) | Test p25–p75 | Test present | Test absent | Remove ns/op | Remove p25–p75 | present after Remove | observed FP rate | 99% upper | FP / p | probes | notes |")
	fmt.Println("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, res := range all {
		for _, r := range res {
			fpr := float64(r.fp) / float64(r.probes)
			fmt.Printf("| %s | %g | %s | %d | %d | %d | %.2f | %.1f | %s | %.1f | %s | %.1f | %.1f | %.1f | %s | %d | %.3g | %.3g | %.3f | %d | %s |\n",
				bench.FormatCount(r.n), r.p, r.lib, r.k, r.counters, r.bytes, float64(r.bytes)*8/float64(r.n),
				bench.Median(r.add), bench.FormatQuartiles(r.add), bench.Median(r.test[bench.SetMixed]), bench.FormatQuartiles(r.test[bench.SetMixed]),
				bench.Median(r.test[bench.SetPresent]), bench.Median(r.test[bench.SetAbsent]), bench.Median(r.remove), bench.FormatQuartiles(r.remove),
				r.left, fpr, bench.WilsonUpper(r.fp, r.probes, bench.Z99), fpr/r.p, r.probes, bench.JoinNotes(r.notes))
		}
	}
}

// printRatios prints ours / BoomFilters for time (median of the paired
// per-chunk ratios, with their quartiles) and memory, and which goals are
// met.
func printRatios(all [][]*result) {
	fmt.Printf("\nOurs / BoomFilters. Time: median of paired per-chunk ratios [p25–p75]. "+
		"Goals: Add, Test (mix) and Remove ≤ %.2f, memory ≤ %.2f, our observed rate ≤ p. FP / p: observed (99%% Wilson upper bound).\n\n", goalTime, goalMemory)
	fmt.Println("| n | p | Add | Test (mix) | Test present | Test absent | Remove | memory | ours FP / p | BoomFilters FP / p | goals missed |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, res := range all {
		o, b := res[0], res[1] // bench.CountingLibNames order: ours, BoomFilters
		add := bench.PairedRatios(o.add, b.add)
		remove := bench.PairedRatios(o.remove, b.remove)
		var test [3][]float64
		for s := range test {
			test[s] = bench.PairedRatios(o.test[s], b.test[s])
		}
		mem := float64(o.bytes) / float64(b.bytes)
		var missed []string
		for _, g := range []struct {
			name string
			miss bool
		}{
			{"Add", bench.Median(add) > goalTime},
			{"Test", bench.Median(test[bench.SetMixed]) > goalTime},
			{"Remove", bench.Median(remove) > goalTime},
			{"memory", mem > goalMemory},
			{"rate", o.fp > uint64(o.p*float64(o.probes))},
		} {
			if g.miss {
				missed = append(missed, g.name)
			}
		}
		if len(missed) == 0 {
			missed = []string{"none"}
		}
		fmt.Printf("| %s | %g | %s | %s | %s | %s | %s | %.4f | %s | %s | %s |\n",
			bench.FormatCount(o.n), o.p, bench.FormatRatio(add), bench.FormatRatio(test[bench.SetMixed]),
			bench.FormatRatio(test[bench.SetPresent]), bench.FormatRatio(test[bench.SetAbsent]), bench.FormatRatio(remove),
			mem, rateOverP(o), rateOverP(b), strings.Join(missed, ", "))
	}
}

// rateOverP is the observed rate over p, with its 99% Wilson upper bound
// over p in brackets.
func rateOverP(r *result) string {
	return fmt.Sprintf("%.3f (%.3f)", float64(r.fp)/float64(r.probes)/r.p, bench.WilsonUpper(r.fp, r.probes, bench.Z99)/r.p)
}
