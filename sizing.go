package bloom

import (
	"fmt"
	"math"
)

// BlockBits is the size of one block of the blocked layout: 512 bits, one
// 64-byte cache line on common hardware.
const BlockBits = 512

// MaxK is the largest number of bit probes per item.
const MaxK = 64

// Sizing margins. Filters are sized for a slightly tighter rate than asked
// for, so that the rate measured on a real filter (which varies around the
// model's expectation) stays at or below the requested one. The margin is
// an exponent: a filter for p is sized for p^(1+e), which costs a fixed
// fraction e of extra bits per key and leaves more relative slack at low p,
// where a filter's rate varies most.
const (
	classicMarginExp = 0.008 // +0.8% bits over the exact classic optimum
	blockedMarginExp = 0.02  // +2% bits over the exact blocked optimum
)

// Sizing is the geometry of a filter: its layout, bits m, probes k, and
// the expected items n and target rate p it was sized for.
type Sizing struct {
	Layout Layout
	N      uint64  // expected distinct items
	P      float64 // target false-positive rate at N items
	Bits   uint64  // m, a multiple of 64 (of 512 for Blocked)
	K      uint32  // bit probes per item
	// BPE is the RedisBloom layout's bits per entry, as RedisBloom
	// records it with each filter (K = ⌈ln 2 · BPE⌉); 0 means RedisBloom's
	// for P, computed here. Other layouts have none: 0.
	BPE float64
}

// Bytes is the size of the bit array in bytes.
func (s Sizing) Bytes() uint64 { return s.Bits / 8 }

// BitsPerKey is m/n.
func (s Sizing) BitsPerKey() float64 { return float64(s.Bits) / float64(s.N) }

// FPRAt is the expected false-positive rate after items distinct items.
func (s Sizing) FPRAt(items uint64) float64 { return ExpectedFPR(s.Layout, s.Bits, s.K, items) }

// String formats the sizing on one line.
func (s Sizing) String() string {
	return fmt.Sprintf("%s m=%d k=%d n=%d p=%g (%.2f bits/key)", s.Layout, s.Bits, s.K, s.N, s.P, s.BitsPerKey())
}

func checkNP(n uint64, p float64) error {
	if n == 0 {
		return ErrInvalidCapacity
	}
	if !(p > 0 && p < 1) { // also rejects NaN
		return fmt.Errorf("%w: got %v", ErrInvalidRate, p)
	}
	return nil
}

// Size computes the smallest filter of the given layout whose expected
// false-positive rate after n distinct items is at most p, using the exact
// model of that layout plus a small safety margin. Small filters get more:
// the rate of one particular filter varies around the expectation (with
// the spread of its set bits, or of its block loads), by ±15% for n = 100
// at p = 0.001, so Size also keeps the expectation plus realizationZ
// standard deviations of that spread at or below p. For n beyond a few
// thousand the margin alone covers it. Size does not allocate the filter
// and applies no size limit.
//
// Of the k that fit the smallest size, Size takes the one with the most
// room under both conditions (the lowest rate for the size), except at
// the smallest size of all (one block, one word), which is often far more
// than n items need: there it takes the fewest probes that fit.
//
// Both conditions are solved together, for the integer number of blocks
// (or words) directly, by a safeguarded Newton iteration per k (see
// sizing_solve.go): 1 to 10 µs for any n and p, against milliseconds for
// the bisections it replaced, with the same size or up to a block (or
// word) smaller, never one that misses the conditions
// (sizing_grid_test.go compares it with that slower solver). Results are
// memoised per (layout, n, p) in a small fixed-size cache (sizeCache), so
// creating many filters with the same parameters costs a lookup (about
// 20 ns). The first sizes in a process also build the blocked model's
// tables for the k they try (milliseconds, once; BenchmarkBlockTablesCold).
//
// For the RedisBloom layout, Size is RedisBloom's own sizing (see
// RedisBloom), with no margin and no model: the filter has RedisBloom's
// rate, which may be above p.
func Size(n uint64, p float64, layout Layout) (Sizing, error) {
	if err := checkNP(n, p); err != nil {
		return Sizing{}, err
	}
	if layout == RedisBloom {
		return redisBloomSize(n, p) // microseconds once per rate, then nanoseconds (bpeCache)
	}
	if layout != Blocked && layout != Classic {
		return Sizing{}, fmt.Errorf("%w: %d", ErrInvalidLayout, layout)
	}
	if s, ok := sizeCache.get(layout, n, p); ok {
		return s, nil
	}
	bits, k := solveSize(layout, float64(n), p, realizationZ)
	if bits == 0 {
		return Sizing{}, fmt.Errorf("%w: n=%d p=%g needs more than 2^64 bits", ErrTooLarge, n, p)
	}
	s := Sizing{Layout: layout, N: n, P: p, Bits: bits, K: uint32(k)}
	sizeCache.put(s)
	return s, nil
}

// solveSize returns the smallest m and its k for n items at rate p with
// the layout's margin and z standard deviations of realization spread,
// or m = 0 if m would not fit a uint64.
func solveSize(layout Layout, n, p, z float64) (uint64, int) {
	if layout == Blocked {
		g := sizeGoal{n: n, t: math.Pow(p, 1+blockedMarginExp), p: p, z: z}
		blocks, k := g.solveBlocked()
		return blocks * BlockBits, k
	}
	g := sizeGoal{n: n, t: math.Pow(p, 1+classicMarginExp), p: p, z: z}
	words, k := g.solveClassic()
	return words * 64, k
}

// optimalBlocked returns the smallest m (a multiple of 512) and its best k
// with blockedFPR(n*512/m, k) <= p, with no margin, or m = 0 if that needs
// 2^64 bits or more.
func optimalBlocked(n, p float64) (uint64, uint32) {
	blocks, k := sizeGoal{n: n, t: p, p: p}.solveBlocked()
	return blocks * BlockBits, uint32(k)
}

// optimalClassic returns the smallest m (a multiple of 64) and its best k
// with classicFPR(m, k, n) <= p, with no margin, or m = 0 if that needs
// 2^64 bits or more.
func optimalClassic(n, p float64) (uint64, uint32) {
	words, k := sizeGoal{n: n, t: p, p: p}.solveClassic()
	return words * 64, uint32(k)
}

// realizationZ is how many standard deviations of a single filter's rate
// around the model's expectation Size keeps below the target (one-sided
// 99%).
const realizationZ = 2.33

// realizedSD is the standard deviation of the false-positive rate of one
// filter (over the random sets of n items it may hold) around the model's
// expectation, to first order: k·q^(k−1)·sd(X)/m for the classic layout,
// with X the set bits; for the blocked layout the spread of the mean of
// the per-block rates over m/512 blocks with Poisson loads.
func realizedSD(layout Layout, m uint64, k uint32, n uint64) float64 {
	if m == 0 || k == 0 || n == 0 {
		return 0
	}
	switch layout {
	case Classic, RedisBloom:
		return classicSD(float64(m), int(k), float64(n))
	case Blocked:
		if k > MaxK {
			return 0
		}
		blocks := float64(m / BlockBits)
		return math.Sqrt(blockedVar(float64(n)/blocks, int(k)) / blocks)
	}
	return 0
}

// ExpectedFPR is the model's expected false-positive rate of a filter with
// the given layout, m bits and k probes after n distinct items. For the
// blocked layout with k > MaxK it returns the bound 1. The RedisBloom
// layout gets the classic model, which assumes independent probes: its
// double hashing does worse for some items (docs/DESIGN.md §4).
func ExpectedFPR(layout Layout, m uint64, k uint32, n uint64) float64 {
	if m == 0 || k == 0 {
		return 1
	}
	if n == 0 {
		return 0
	}
	switch layout {
	case Blocked:
		if k > MaxK {
			return 1 // no filter has more probes; 1 bounds the rate without a table of k*512 steps per item
		}
		return blockedFPR(float64(n)*BlockBits/float64(m), int(k))
	case Classic, RedisBloom:
		return classicFPR(float64(m), int(k), float64(n))
	}
	return 1
}

// Validate reports whether s is a geometry a filter can have: a known
// layout, bits a positive multiple of 64 (512 for Blocked), 1 ≤ K ≤ MaxK
// (1075 for the RedisBloom layout), N > 0, 0 < P < 1, and BPE 0 or (in
// the RedisBloom layout only) finite and positive.
func (s Sizing) Validate() error { return checkSizing(s) }
