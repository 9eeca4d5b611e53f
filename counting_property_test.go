package bloom

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// Property and concurrency tests of the counting filter (counting.go).

// TestCountingMultiset runs random Add/Remove sequences against an exact
// multiset: every item with positive multiplicity tests present, its Count
// is at least min(multiplicity, 15), Remove of such an item reports true,
// and once everything is removed every counter is 0 or 15 (a counter is 15
// only if it saturated at some point; with no saturation, all are 0).
func TestCountingMultiset(t *testing.T) {
	for _, tc := range []struct {
		name             string
		n, universe, ops int
		maxMult          int
		expectSaturation bool
		variant          countingVariant
	}{
		{"sparse", 2000, 300, 20_000, 3, false, countingVariant{false, false}},
		{"sparse/keyed/concurrent", 2000, 300, 20_000, 3, false, countingVariant{true, true}},
		{"crowded", 40, 120, 20_000, 12, true, countingVariant{false, false}},
		{"crowded/concurrent", 40, 120, 20_000, 12, true, countingVariant{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCountingT(t, uint64(tc.n), 0.01, tc.variant.opts()...)
			rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.ops)))
			mult := make([]int, tc.universe)
			item := func(i int) []byte { return fmt.Appendf(nil, "m%d", i) }
			everSaturated := false
			check := func() {
				for i, m := range mult {
					if m == 0 {
						continue
					}
					if !c.Test(item(i)) {
						t.Fatalf("false negative: item %d with multiplicity %d", i, m)
					}
					if got := c.Count(item(i)); got < uint(min(m, counterMax)) {
						t.Fatalf("item %d: Count %d < multiplicity %d", i, got, m)
					}
				}
				for x := range c.Counters() {
					everSaturated = everSaturated || c.counter(x) == counterMax
				}
			}
			adds, removes := 0, 0
			for op := range tc.ops {
				i := rng.IntN(tc.universe)
				if mult[i] > 0 && (mult[i] >= tc.maxMult || rng.IntN(2) == 0) {
					if !c.Remove(item(i)) {
						t.Fatalf("op %d: Remove of item %d (multiplicity %d) reported absent", op, i, mult[i])
					}
					mult[i]--
					removes++
				} else {
					c.Add(item(i))
					mult[i]++
					adds++
				}
				if op%500 == 0 {
					check()
				}
			}
			check()
			if c.Inserted() != uint64(adds-removes) {
				t.Fatalf("Inserted %d, want %d adds - %d removes", c.Inserted(), adds, removes)
			}
			for i := range mult {
				for ; mult[i] > 0; mult[i]-- {
					if !c.Remove(item(i)) {
						t.Fatalf("final Remove of item %d reported absent", i)
					}
				}
			}
			zero, sat := 0, 0
			for x := range c.Counters() {
				switch c.counter(x) {
				case 0:
					zero++
				case counterMax:
					sat++
				default:
					t.Fatalf("counter %d = %d after removing everything, want 0 or 15", x, c.counter(x))
				}
			}
			t.Logf("%d adds, %d removes; %d counters: %d zero, %d saturated", adds, removes, c.Counters(), zero, sat)
			if sat > 0 && !everSaturated {
				t.Fatal("counters at 15 that were never seen saturated")
			}
			if everSaturated != tc.expectSaturation {
				t.Fatalf("saturation %v, want %v: adjust the case", everSaturated, tc.expectSaturation)
			}
			if c.Inserted() != 0 {
				t.Fatalf("Inserted %d after removing everything", c.Inserted())
			}
		})
	}
}

// TestCountingConcurrent: 8 goroutines each add their own items 3 times
// then remove them, while 4 readers check that a resident set, added
// beforehand, never tests absent and Count never drops below its
// multiplicity; meanwhile goroutines race Adds and Removes of one shared
// item. Afterwards only the resident set (and the shared item's net
// count) remains: the counters are exactly those of a sequential replay.
func TestCountingConcurrent(t *testing.T) {
	const writers, readers, rounds = 8, 4, 3
	per := 5_000
	if raceEnabled {
		per = 1_500
	}
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprint("keyed=", keyed), func(t *testing.T) {
			v := countingVariant{keyed, true}
			c := newCountingT(t, uint64(writers*per+1000), 0.01, v.opts()...)
			ref := newCountingT(t, uint64(writers*per+1000), 0.01, countingVariant{keyed, false}.opts()...)
			var buf [32]byte
			for i := range uint64(1000) {
				c.Add(fmt.Appendf(buf[:0], "resident%d", i))
				c.Add(fmt.Appendf(buf[:0], "resident%d", i))
				ref.Add(fmt.Appendf(buf[:0], "resident%d", i))
				ref.Add(fmt.Appendf(buf[:0], "resident%d", i))
			}
			var wg, rwg sync.WaitGroup
			stop := make(chan struct{})
			errs := make(chan string, writers+readers)
			for w := range writers {
				wg.Go(func() {
					var buf [32]byte
					for i := range per {
						for range rounds {
							c.Add(fmt.Appendf(buf[:0], "w%d-%d", w, i))
						}
						c.AddString("shared")
					}
					for i := range per {
						for range rounds {
							if !c.Remove(fmt.Appendf(buf[:0], "w%d-%d", w, i)) {
								errs <- fmt.Sprintf("writer %d: Remove of its item %d reported absent", w, i)
								return
							}
						}
						if !c.RemoveString("shared") {
							errs <- fmt.Sprintf("writer %d: Remove of shared reported absent", w)
							return
						}
					}
				})
			}
			for r := range readers {
				rwg.Go(func() {
					var buf [32]byte
					for i := uint64(r); ; i = (i + readers) % 1000 {
						select {
						case <-stop:
							return
						default:
						}
						k := fmt.Appendf(buf[:0], "resident%d", i)
						if !c.Test(k) || c.Count(k) < 2 {
							errs <- fmt.Sprintf("resident %d: Test %v Count %d", i, c.Test(k), c.Count(k))
							return
						}
					}
				})
			}
			wg.Wait()
			close(stop)
			rwg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			if !slices.Equal(c.snapshot(), ref.snapshot()) {
				// Saturated counters (15) are the only way the states can
				// differ: a counter that hit 15 mid-run stays there.
				diff := 0
				for x := range c.Counters() {
					if a, b := c.counter(x), ref.counter(x); a != b && a != counterMax {
						t.Fatalf("counter %d = %d, sequential replay %d", x, a, b)
					} else if a != b {
						diff++
					}
				}
				t.Logf("%d counters saturated during the run", diff)
			}
			if c.Inserted() != 2000 {
				t.Fatalf("Inserted %d, want 2000", c.Inserted())
			}
		})
	}
}
