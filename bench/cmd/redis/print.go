package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bloomery/bloom/bench"
	"github.com/bloomery/bloom/bench/redisbench"
)

// Goals of the issue for our batches of goalBatch: Add and Exists per
// second at least these multiples of go-zero's, from the most goroutines
// and from one.
const (
	goalBatch        = 1000
	goalAddVsMany    = 10
	goalExistsVsMany = 15
	goalVsOne        = 30
)

const (
	opAdd = iota
	opExists
)

var opNames = [2]string{"Add", "Exists"}

// benchCase is one library, way of calling and goroutine count.
type benchCase struct {
	lib        string
	batch      int // 0: single calls
	goroutines int
	ops        [2]struct{ rounds []measure } // opAdd, opExists
}

// measure is one timed run of one operation.
type measure struct {
	items          int
	rate           float64 // items per second
	wall           time.Duration
	work           map[string]redisbench.CommandStats // the filter's commands (RedisStats.Work)
	serverCPU      time.Duration
	clientCPU      time.Duration // -1: not measured
	falseNegatives int
}

func (c *benchCase) calls() string {
	if c.batch == 0 {
		return "single"
	}
	return fmt.Sprintf("batch %d", c.batch)
}

func (c *benchCase) label() string {
	return fmt.Sprintf("%s %s ×%d", c.lib, c.calls(), c.goroutines)
}

// makeCases lists go-zero's single calls, then ours single and batched,
// each with every goroutine count.
func makeCases(goroutines, batches []int) []*benchCase {
	var out []*benchCase
	for _, lib := range redisbench.RedisLibNames {
		calls := append([]int{0}, batches...)
		if lib == redisbench.RedisGoZero {
			calls = []int{0}
		}
		for _, b := range calls {
			for _, g := range goroutines {
				out = append(out, &benchCase{lib: lib, batch: b, goroutines: g})
			}
		}
	}
	return out
}

func find(cases []*benchCase, lib string, batch, goroutines int) *benchCase {
	for _, c := range cases {
		if c.lib == lib && c.batch == batch && c.goroutines == goroutines {
			return c
		}
	}
	return nil
}

// references are go-zero's cases with the most and the fewest goroutines.
func references(cases []*benchCase, goroutines []int) (many, one *benchCase) {
	return find(cases, redisbench.RedisGoZero, 0, slices.Max(goroutines)), find(cases, redisbench.RedisGoZero, 0, slices.Min(goroutines))
}

func rates(ms []measure) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = m.rate
	}
	return out
}

// ratio is the median over rounds of c's rate over ref's in the same round.
func ratio(c, ref *benchCase, op int) float64 {
	return bench.Median(bench.PairedRatios(rates(c.ops[op].rounds), rates(ref.ops[op].rounds)))
}

// perSecond prints a rate as 12.3k or 1.52M.
func perSecond(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.3gM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.3gk", x/1e3)
	}
	return fmt.Sprintf("%.3g", x)
}

func printRates(cases []*benchCase, goroutines []int) {
	many, one := references(cases, goroutines)
	fmt.Printf("| library | calls | goroutines | Add items/s | Add min–max | Add / go-zero ×%d | Add / go-zero ×%d | Exists items/s | Exists min–max | Exists / go-zero ×%d | Exists / go-zero ×%d | notes |\n",
		many.goroutines, one.goroutines, many.goroutines, one.goroutines)
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, c := range cases {
		fmt.Printf("| %s | %s | %d ", c.lib, c.calls(), c.goroutines)
		var notes []string
		for op := range c.ops {
			r := rates(c.ops[op].rounds)
			fmt.Printf("| %s | %s–%s | %.2f | %.2f ", perSecond(bench.Median(r)), perSecond(slices.Min(r)), perSecond(slices.Max(r)),
				ratio(c, many, op), ratio(c, one, op))
			for _, m := range c.ops[op].rounds {
				if m.falseNegatives > 0 {
					notes = append(notes, fmt.Sprintf("FALSE NEGATIVES: %d", m.falseNegatives))
				}
			}
		}
		fmt.Printf("| %s |\n", bench.JoinNotes(notes))
	}
}

// printCosts prints where the time goes, from the totals over all rounds:
// the server's commands per item and their execution time, the server's
// whole CPU time (execution plus reading, parsing and replying), and this
// process's CPU time (the clients).
func printCosts(cases []*benchCase) {
	fmt.Println("\nWhere the time goes, per item, totals over all rounds. `commands`: the commands that did the filter's work (INFO commandstats; " +
		"go-zero's SETBIT/GETBIT inside its Lua script are in EVALSHA's time), how many per item and usec_per_call; `exec`: their execution time " +
		"(usec) / items; `server CPU`: redis-server's user+system CPU (INFO cpu) / items, which adds reading, parsing and replying to exec; " +
		"`client CPU`: this process's CPU / items (both clients, hashing, go-redis). Wall = 1 / rate.")
	fmt.Println()
	fmt.Println("| library | calls | goroutines | op | wall µs | commands | exec µs | server CPU µs | client CPU µs |")
	fmt.Println("|---|---|---:|---|---:|---|---:|---:|---:|")
	for _, c := range cases {
		for op := range c.ops {
			var items int
			var wall, server, client time.Duration
			work := map[string]redisbench.CommandStats{}
			for _, m := range c.ops[op].rounds {
				items += m.items
				wall += m.wall
				server += m.serverCPU
				if client >= 0 && m.clientCPU >= 0 {
					client += m.clientCPU
				} else {
					client = -1
				}
				for name, cs := range m.work {
					w := work[name]
					work[name] = redisbench.CommandStats{Calls: w.Calls + cs.Calls, Usec: w.Usec + cs.Usec}
				}
			}
			var usec int64
			for _, cs := range work {
				usec += cs.Usec
			}
			per := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Nanoseconds())/1e3/float64(items)) }
			clientCol := "–"
			if client >= 0 {
				clientCol = per(client)
			}
			fmt.Printf("| %s | %s | %d | %s | %s | %s | %.2f | %s | %s |\n", c.lib, c.calls(), c.goroutines, opNames[op],
				per(wall), commandList(work, usec, items), float64(usec)/float64(items), per(server), clientCol)
		}
	}
}

// commandList names the commands with at least 1% of the execution time,
// costliest first: "bitfield_ro 1 per 292 items, 310 µs/call".
func commandList(work map[string]redisbench.CommandStats, usec int64, items int) string {
	names := slices.Collect(maps.Keys(work))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(work[b].Usec, work[a].Usec) })
	var out []string
	for _, name := range names {
		cs := work[name]
		if cs.Calls == 0 || cs.Usec*100 < usec {
			continue
		}
		perItem := float64(cs.Calls) / float64(items)
		count := fmt.Sprintf("%.3g per item", perItem)
		if perItem < 0.995 {
			count = fmt.Sprintf("1 per %.3g items", 1/perItem)
		}
		out = append(out, fmt.Sprintf("%s %s, %.2f µs/call", name, count, float64(cs.Usec)/float64(cs.Calls)))
	}
	return strings.Join(out, "; ")
}

// printGoals checks the goals for our batches of goalBatch.
func printGoals(cases []*benchCase, goroutines []int) {
	many, one := references(cases, goroutines)
	fmt.Printf("\nGoals (bloomery batch %d): Add ≥ %d× and Exists ≥ %d× go-zero's rate with %d goroutines, both ≥ %d× its rate with %d.\n\n",
		goalBatch, goalAddVsMany, goalExistsVsMany, many.goroutines, goalVsOne, one.goroutines)
	fmt.Printf("| goroutines | Add / go-zero ×%d | Exists / go-zero ×%d | Add / go-zero ×%d | Exists / go-zero ×%d | goals missed |\n",
		many.goroutines, many.goroutines, one.goroutines, one.goroutines)
	fmt.Println("|---:|---:|---:|---:|---:|---|")
	for _, g := range goroutines {
		c := find(cases, redisbench.RedisFilter, goalBatch, g)
		if c == nil {
			fmt.Printf("| %d | – | – | – | – | (no batch %d in -batches) |\n", g, goalBatch)
			continue
		}
		am, em, a1, e1 := ratio(c, many, opAdd), ratio(c, many, opExists), ratio(c, one, opAdd), ratio(c, one, opExists)
		var missed []string
		if am < goalAddVsMany {
			missed = append(missed, fmt.Sprintf("Add vs ×%d", many.goroutines))
		}
		if em < goalExistsVsMany {
			missed = append(missed, fmt.Sprintf("Exists vs ×%d", many.goroutines))
		}
		if a1 < goalVsOne {
			missed = append(missed, fmt.Sprintf("Add vs ×%d", one.goroutines))
		}
		if e1 < goalVsOne {
			missed = append(missed, fmt.Sprintf("Exists vs ×%d", one.goroutines))
		}
		if len(missed) == 0 {
			missed = []string{"none"}
		}
		fmt.Printf("| %d | %.1f | %.1f | %.1f | %.1f | %s |\n", g, am, em, a1, e1, strings.Join(missed, ", "))
	}
}
