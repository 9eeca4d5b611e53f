package bloom

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
)

// Tests of the counting filter (counting.go). Property and concurrency:
// counting_property_test.go; encoding: counting_encoding_test.go;
// accuracy: counting_fpr_test.go.

// countingVariant is one mode of a counting filter: hash x concurrency.
type countingVariant struct{ keyed, concurrent bool }

func (v countingVariant) String() string {
	return variant{Classic, v.keyed, v.concurrent}.String()
}

func (v countingVariant) opts() []Option {
	var o []Option
	if v.keyed {
		o = append(o, WithKey(testKey))
	}
	if v.concurrent {
		o = append(o, WithConcurrent())
	}
	return o
}

var countingVariants = []countingVariant{{false, false}, {true, false}, {false, true}, {true, true}}

func newCountingT(t testing.TB, n uint64, p float64, opts ...Option) *Counting {
	t.Helper()
	c, err := NewCounting(n, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// snapshot copies the counter words (atomically for a concurrent filter).
func (c *Counting) snapshot() []uint64 {
	w := make([]uint64, len(c.words))
	for i := range w {
		if c.concurrent {
			w[i] = atomic.LoadUint64(&c.words[i])
		} else {
			w[i] = c.words[i]
		}
	}
	return w
}

// boomCounters is tylertreat/BoomFilters' counting-filter size for n and p:
// OptimalM = ceil(n·ln(1/p)/ln²2) buckets of 4 bits, k = ceil(log2(1/p)).
func boomCounters(n uint64, p float64) (uint64, uint32) {
	m := math.Ceil(float64(n) / (math.Ln2 * math.Ln2 / math.Abs(math.Log(p))))
	return uint64(m), uint32(math.Ceil(math.Log2(1 / p)))
}

// TestCountingSizing checks that a counting filter has the classic
// layout's geometry (m counters, k) for n and p, whose expected rate is
// within p, and compares its memory with BoomFilters' counting filter.
func TestCountingSizing(t *testing.T) {
	for _, p := range []float64{0.1, 0.01, 0.001, 1e-6} {
		for _, n := range []uint64{1000, 1_000_000, 100_000_000} {
			s, err := Size(n, p, Classic)
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewCounting(n, p, WithMaxBytes(1))
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("n=%d p=%g WithMaxBytes(1): %v, want ErrTooLarge", n, p, err)
			}
			if n > 1_000_000 {
				continue // sized above; not allocated
			}
			c = newCountingT(t, n, p)
			if c.Counters() != s.Bits || c.K() != s.K || c.Bytes() != s.Bits/2 || c.Cap() != n || c.TargetFPR() != p {
				t.Fatalf("n=%d p=%g: %d counters k=%d, want the classic sizing %v", n, p, c.Counters(), c.K(), s)
			}
			if e := ExpectedFPR(Classic, c.Counters(), c.K(), n); e > p {
				t.Fatalf("n=%d p=%g: expected rate %g > p", n, p, e)
			}
			bm, bk := boomCounters(n, p)
			ratio := float64(c.Counters()) / float64(bm)
			t.Logf("n=%d p=%g: %.3f counters/key = %.3f bytes/key, k=%d (expected rate %.4f p); BoomFilters %.3f counters/key k=%d (expected rate %.4f p): memory ratio %.4f",
				n, p, float64(c.Counters())/float64(n), float64(c.Bytes())/float64(n), c.K(), ExpectedFPR(Classic, c.Counters(), c.K(), n)/p,
				float64(bm)/float64(n), bk, ExpectedFPR(Classic, bm, bk, n)/p, ratio)
			if n >= 1_000_000 && ratio > 1.02 {
				t.Errorf("n=%d p=%g: %.4f× BoomFilters' memory", n, p, ratio)
			}
		}
	}
}

func TestCountingOptions(t *testing.T) {
	for _, bad := range []struct {
		n uint64
		p float64
	}{{0, 0.01}, {10, 0}, {10, 1}, {10, -1}, {10, math.NaN()}, {10, math.Inf(1)}} {
		_, want := New(bad.n, bad.p, WithLayout(Classic))
		_, got := NewCounting(bad.n, bad.p)
		if want == nil || got == nil || got.Error() != want.Error() || !errors.Is(got, ErrInvalidCapacity) && !errors.Is(got, ErrInvalidRate) {
			t.Errorf("NewCounting(%d, %v): %v, want New's %v", bad.n, bad.p, got, want)
		}
	}
	if _, err := NewCounting(100, 0.01, WithLayout(Blocked)); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("WithLayout(Blocked): %v, want ErrInvalidLayout", err)
	} else {
		t.Log(err)
	}
	if _, err := NewCounting(100, 0.01, WithLayout(Layout(9))); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("WithLayout(9): %v, want ErrInvalidLayout", err)
	}
	c := newCountingT(t, 100, 0.01, WithLayout(Classic), WithKey(testKey), WithConcurrent())
	if c.Layout() != Classic || !c.Keyed() || !c.Concurrent() || c.HashID() != HashSipHash {
		t.Fatalf("options not honoured: layout %s keyed %v concurrent %v hash %s", c.Layout(), c.Keyed(), c.Concurrent(), c.HashID())
	}
	if c.Hash([]byte("x")) != KeyedHash(testKey, []byte("x")) {
		t.Fatal("keyed Hash differs from KeyedHash")
	}
	u := newCountingT(t, 100, 0.01)
	if u.Keyed() || u.Concurrent() || u.HashID() != HashXXH3 || u.Hash([]byte("x")) != HashBytes([]byte("x")) {
		t.Fatal("unkeyed filter: wrong mode or hash")
	}
	// The size limit is inclusive.
	if _, err := NewCounting(100, 0.01, WithMaxBytes(u.Bytes())); err != nil {
		t.Errorf("WithMaxBytes(exactly its size): %v", err)
	}
	if _, err := NewCounting(100, 0.01, WithMaxBytes(u.Bytes()-1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("WithMaxBytes(size-1): %v, want ErrTooLarge", err)
	}
}

// TestCountingNibbles checks every counter position of a word, with
// neighbours at 0 and at 15: increments saturate at 15 and never carry,
// decrements stop at 0 and never touch a 15, and the other 15 counters
// never change.
func TestCountingNibbles(t *testing.T) {
	type ops struct {
		name     string
		inc, dec func(*uint64, uint64)
	}
	for _, o := range []ops{{"plain", inc, dec}, {"atomic", incAtomic, decAtomic}} {
		for _, fill := range []uint64{0, 0xffff_ffff_ffff_ffff, 0x0123_4567_89ab_cdef} {
			for j := range uint64(countersPerWord) {
				s := j * counterBits
				mask := uint64(counterMax) << s
				w := fill &^ mask
				for want := uint64(1); want <= 20; want++ {
					o.inc(&w, s)
					if got := w >> s & counterMax; got != min(want, counterMax) || w&^mask != fill&^mask {
						t.Fatalf("%s: counter %d, fill %x: after %d increments word %016x", o.name, j, fill, want, w)
					}
				}
				o.dec(&w, s) // saturated: stays
				if w>>s&counterMax != counterMax {
					t.Fatalf("%s: counter %d: decremented from 15", o.name, j)
				}
				w = fill&^mask | 3<<s
				for range 5 {
					o.dec(&w, s)
				}
				if w != fill&^mask {
					t.Fatalf("%s: counter %d, fill %x: 3 then 5 decrements: %016x", o.name, j, fill, w)
				}
			}
		}
	}
}

// TestCountingSaturation adds one item 20 times: its counters stop at 15,
// Count says 15, and Removes (which find every counter non-zero and so
// report true) never decrement a saturated counter, so the item stays
// present with Count 15 and the counters are unchanged by any number of
// Removes.
func TestCountingSaturation(t *testing.T) {
	for _, v := range countingVariants {
		t.Run(v.String(), func(t *testing.T) {
			c := newCountingT(t, 1000, 0.01, v.opts()...)
			c.AddString("other")
			for i := 1; i <= 20; i++ {
				c.AddString("hot")
				if got := c.CountString("hot"); got < uint(min(i, 15)) || got > 15 {
					t.Fatalf("after %d adds Count = %d", i, got)
				}
			}
			if c.CountString("hot") != 15 {
				t.Fatalf("Count = %d after 20 adds, want 15", c.CountString("hot"))
			}
			var buf [MaxK]uint64
			for _, x := range c.probes(c.Hash([]byte("hot")), &buf) {
				if c.counter(x) != 15 {
					t.Fatalf("counter %d = %d, want 15", x, c.counter(x))
				}
			}
			before := c.snapshot()
			for i := range 20 {
				if !c.RemoveString("hot") {
					t.Fatalf("Remove %d of a saturated item reported absent", i+1)
				}
			}
			if !slices.Equal(c.snapshot(), before) {
				t.Fatal("Removes changed saturated counters")
			}
			if c.CountString("hot") != 15 || !c.TestString("hot") || !c.TestString("other") {
				t.Fatalf("after 20 removes: Count %d, Test %v", c.CountString("hot"), c.TestString("hot"))
			}
			if c.Inserted() != 1 {
				t.Fatalf("Inserted = %d, want 21 adds - 20 removes = 1", c.Inserted())
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCountingRemoveAbsent: removing an item that tests absent reports
// false and leaves the filter's encoding (counters and count) identical.
func TestCountingRemoveAbsent(t *testing.T) {
	for _, v := range countingVariants {
		t.Run(v.String(), func(t *testing.T) {
			c := newCountingT(t, 2000, 0.01, v.opts()...)
			if c.RemoveString("nothing") {
				t.Fatal("Remove on an empty filter reported true")
			}
			var buf [64]byte
			for i := range uint64(2000) {
				c.Add(itemKey(buf[:], i))
			}
			before := mustMarshalCounting(t, c)
			absent := 0
			for i := range uint64(20_000) {
				k := absentKey(buf[:], i)
				if c.Test(k) {
					continue // a false positive: Remove would (wrongly) succeed
				}
				absent++
				if c.Remove(k) {
					t.Fatalf("Remove of absent %q reported true", k)
				}
			}
			if absent < 19_000 {
				t.Fatalf("only %d of 20000 probes absent", absent)
			}
			if !bytes.Equal(mustMarshalCounting(t, c), before) {
				t.Fatal("Removes of absent items changed the filter")
			}
		})
	}
}

// TestCountingDuplicateProbes: in a tiny filter (64 counters, k = 16) most items have two probes
// on one counter. Add increments such a counter once, Count is then 1, and
// Remove restores the exact state.
func TestCountingDuplicateProbes(t *testing.T) {
	c, err := newCounting(4, 0.01, 64, 16, config{maxBytes: DefaultMaxBytes})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i := range 200 {
		item := fmt.Sprint("dup", i)
		h := c.Hash([]byte(item))
		var buf [MaxK]uint64
		distinct := c.probes(h, &buf)
		if len(distinct) == int(c.K()) {
			continue
		}
		found++
		all := make([]uint64, c.K())
		for j := range c.K() {
			all[j] = mulhi(classicWord(h, j), c.Counters())
		}
		c.AddString(item)
		for x := range c.Counters() {
			want := uint64(boolInt(slices.Contains(all, x)))
			if c.counter(x) != want {
				t.Fatalf("%s (probes %v): counter %d = %d, want %d", item, all, x, c.counter(x), want)
			}
		}
		if c.CountString(item) != 1 {
			t.Fatalf("%s: Count %d after one Add", item, c.CountString(item))
		}
		if !c.RemoveString(item) || slices.ContainsFunc(c.words, func(w uint64) bool { return w != 0 }) {
			t.Fatalf("%s: Remove did not restore the empty filter", item)
		}
	}
	if found < 100 {
		t.Fatalf("only %d of 200 items had a repeated probe", found)
	}
}

// TestCountingAddRemove: on a filter holding random items, Add then Remove
// of any item gives back exactly the same counters, except when one of its
// counters was at 14 before (it saturates and stays 15; a counter already
// at 15 is left at 15 by both).
func TestCountingAddRemove(t *testing.T) {
	c := newCountingT(t, 50, 0.1) // small: counters reach 14 and 15
	rng := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		c.AddString(fmt.Sprint("base", rng.IntN(60)))
	}
	restored, saturated := 0, 0
	for i := range 2000 {
		item := fmt.Sprint("x", i)
		var buf [MaxK]uint64
		high := false
		for _, x := range c.probes(c.Hash([]byte(item)), &buf) {
			high = high || c.counter(x) == counterMax-1
		}
		before := c.snapshot()
		c.AddString(item)
		if !c.RemoveString(item) {
			t.Fatalf("%s: Remove after Add reported absent", item)
		}
		same := slices.Equal(c.snapshot(), before)
		if same == high {
			t.Fatalf("%s: counter at 14 before: %v; state restored: %v", item, high, same)
		}
		if same {
			restored++
		} else {
			saturated++
			copy(c.words, before) // keep the filter as it was
		}
	}
	if restored == 0 || saturated == 0 {
		t.Fatalf("restored %d, saturated %d: want both cases covered", restored, saturated)
	}
}

func TestCountingZeroAllocs(t *testing.T) {
	for _, v := range countingVariants {
		t.Run(v.String(), func(t *testing.T) {
			c := newCountingT(t, 10_000, 0.01, v.opts()...)
			item, str := []byte("alloc-item"), "alloc-string"
			h := c.Hash(item)
			for _, op := range []struct {
				name string
				fn   func()
			}{
				{"Add", func() { c.Add(item) }},
				{"Test", func() { c.Test(item) }},
				{"Count", func() { c.Count(item) }},
				{"Remove", func() { c.Remove(item) }},
				{"AddString", func() { c.AddString(str) }},
				{"TestString", func() { c.TestString(str) }},
				{"CountString", func() { c.CountString(str) }},
				{"RemoveString", func() { c.RemoveString(str) }},
				{"AddHash", func() { c.AddHash(h) }},
				{"TestHash", func() { c.TestHash(h) }},
				{"CountHash", func() { c.CountHash(h) }},
				{"RemoveHash", func() { c.RemoveHash(h) }},
				{"Hash", func() { c.Hash(item) }},
			} {
				if n := testing.AllocsPerRun(100, op.fn); n != 0 {
					t.Errorf("%s: %v allocations per call", op.name, n)
				}
			}
		})
	}
}
