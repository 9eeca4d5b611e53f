package bloom

import (
	"math"
	"sync"
	"sync/atomic"
)

// The exact model of the blocked layout.
//
// A block holding i items has X_i distinct bits set after i·k uniform
// probes into 512 bits, and answers a query falsely with probability
// g(i) = E[(X_i/512)^k]. Block loads are Poisson(λ) with λ = n·512/m
// items per block, so the filter's expected rate is
//
//	F(λ, k) = Σ_i Pois(i; λ) · g(i)
//
// which depends on λ and k only, never on n or m apart. The tables of
// g(i) and of g(i)² (for the spread of one filter's rate) come from a
// dynamic program over the number of set bits, k·512 steps per item;
// they are built once per k, extended in place as larger loads are
// needed, and read without a lock. The Poisson weights come by the
// recurrence w(i±1) from one exp at the mode, and the sum stops where
// the rest is below 1e-16 of it, so an evaluation costs a few hundred
// multiply-adds for the loads of real filters.

// blockedFPR is the expected rate of the blocked layout when items per block
// follow Poisson(lambda): F(lambda, k) above. Real block loads are
// binomial, which has less spread, so this is conservative.
func blockedFPR(lambda float64, k int) float64 {
	if lambda <= 0 {
		return 0
	}
	if full := fullBlock(k); poissonTop(lambda) >= float64(full) {
		return overfilledFPR(lambda, k, full)
	}
	return math.Min(blockedSums(lambda, k).s1, 1)
}

// poissonTop is a load beyond which the Poisson(lambda) weights are below
// 1e-40: lambda + 15 sd. (A float: for huge lambda it does not fit an int.)
func poissonTop(lambda float64) float64 { return lambda + 15*math.Sqrt(lambda) + 40 }

// fullBlock is a number of items beyond which a block is full for all
// practical purposes: after i*k >= 45*512 probes a given bit is unset with
// probability (1-1/512)^(i*k) < e^-45, so 1 - E[(X_i/512)^k] < k*e^-45 < 1e-17.
func fullBlock(k int) int {
	return (45*BlockBits+k-1)/k + 1
}

// poissonSums are Poisson(lambda)-weighted sums over a block's load i:
// s1 = Σ w·g(i) (the expected rate), s2 = Σ w·g(i)² (its second moment),
// and their derivatives in lambda, d1 and d2 (dw/dλ = w·(i/λ − 1)).
type poissonSums struct{ s1, s2, d1, d2 float64 }

// sumTolerance is where blockedSums stops: when a bound on the terms left
// is below this fraction of the sum so far.
const sumTolerance = 1e-16

// blockedSums returns the sums for k probes at lambda items per block,
// for lambda with poissonTop(lambda) < fullBlock(k). It starts at the
// mode, whose weight is the only exp, and walks up, then down, each
// weight from its neighbour.
func blockedSums(lambda float64, k int) poissonSums {
	t := blockTableMoments(k, int(poissonTop(lambda))+1)
	e1, e2 := t.e1, t.e2
	top := min(len(e1), int(poissonTop(lambda))+1)
	mode := min(int(lambda), top-1)
	lg, _ := math.Lgamma(float64(mode) + 1)
	w0 := math.Exp(float64(mode)*math.Log(lambda) - lambda - lg)
	inv := 1 / lambda
	var s1, s2, d1, d2 float64
	// Up from the mode: past lambda the weights fall by at least
	// q = lambda/(i+1) per step, so the rest is at most w·q/(1−q) (g ≤ 1).
	for i, w := mode, w0; i < top; i++ {
		a, b, r := w*e1[i], w*e2[i], float64(i)*inv-1
		s1, s2, d1, d2 = s1+a, s2+b, d1+a*r, d2+b*r
		q := lambda / float64(i+1)
		if q < 1 && w*q <= sumTolerance*(1-q)*s1 {
			break
		}
		w *= q
	}
	// Down: g falls with i, and the weights by q = i/lambda or more per
	// step, so the rest is at most the last term times q/(1−q).
	for i, w := mode-1, w0; i >= 0; i-- {
		w *= float64(i+1) * inv
		a, b, r := w*e1[i], w*e2[i], float64(i)*inv-1
		s1, s2, d1, d2 = s1+a, s2+b, d1+a*r, d2+b*r
		if q := float64(i) * inv; a*q <= sumTolerance*(1-q)*s1 && b*q <= sumTolerance*(1-q)*s2 {
			break
		}
	}
	return poissonSums{s1, s2, d1, d2}
}

// overfilledFPR is blockedFPR for a lambda so large that the Poisson sum
// would run past fullBlock(k): 1 - sum_{i<full} Pois(i; lambda)(1 - g(i)),
// treating g(i) as 1 from full on. It keeps the table (and the time)
// bounded for any lambda; the rate is then close to 1, so the subtraction
// loses no relative precision. The weights below full rise towards the
// mode, so the walk goes down from full−1 and stops once they underflow.
func overfilledFPR(lambda float64, k, full int) float64 {
	e := blockTableMoments(k, full).e1
	i := full - 1
	lg, _ := math.Lgamma(float64(i) + 1)
	w := math.Exp(float64(i)*math.Log(lambda) - lambda - lg)
	deficit := 0.0
	for ; i >= 0 && w > 0; i-- {
		deficit += w * (1 - e[i])
		w *= float64(i) / lambda
	}
	return math.Max(0, math.Min(1, 1-deficit))
}

// blockedVar is the variance of one block's rate when its load is
// Poisson(lambda): E[g²] − E[g]² over loads and set bits. It is 0 where
// blockedFPR uses the overfilled bound (rates near 1, never a sizing
// target).
func blockedVar(lambda float64, k int) float64 {
	if lambda <= 0 || poissonTop(lambda) >= float64(fullBlock(k)) {
		return 0
	}
	s := blockedSums(lambda, k)
	return math.Max(0, s.s2-s.s1*s.s1)
}

// blockMoments holds, for i items in one block, e1[i] = E[(X_i/512)^k] (the
// block's expected rate) and e2[i] = E[(X_i/512)^2k] (its second moment).
// A published blockMoments is never modified; extending a table publishes
// a longer one (which may share the backing arrays: entries below the old
// length are never written again).
type blockMoments struct{ e1, e2 []float64 }

// blockTables are the tables per k, and the state of each one's dynamic
// program, so that a longer table continues where the last one stopped.
var blockTables [MaxK + 1]struct {
	snap atomic.Pointer[blockMoments]
	mu   sync.Mutex // serialises extensions
	dist []float64  // distribution of set bits after len(snap.e1)−1 items
	pow  []float64  // (x/512)^k
	hi   int        // dist[x] == 0 for x > hi
}

// blockTable returns e[i] = E[(X_i/512)^k] for i in [0, n).
func blockTable(k, n int) []float64 { return blockTableMoments(k, n).e1[:n] }

// blockTableMoments returns the table for k with at least n entries
// (1 ≤ k ≤ MaxK), extending it first if it is shorter.
func blockTableMoments(k, n int) *blockMoments {
	bt := &blockTables[k]
	if t := bt.snap.Load(); t != nil && len(t.e1) >= n {
		return t
	}
	bt.mu.Lock()
	defer bt.mu.Unlock()
	t := bt.snap.Load()
	if t != nil && len(t.e1) >= n {
		return t
	}
	const b = BlockBits
	if t == nil {
		bt.pow = make([]float64, b+1)
		for x := range bt.pow {
			bt.pow[x] = math.Pow(float64(x)/b, float64(k))
		}
		bt.dist = make([]float64, b+1)
		bt.dist[0] = 1
		t = &blockMoments{e1: []float64{0}, e2: []float64{0}}
	}
	// Grow by half at least, so that a run of slightly larger loads
	// extends the table a few times, not once per call.
	n = max(n, min(len(t.e1)*3/2, fullBlock(k)+1))
	e1, e2 := t.e1, t.e2
	dist, pow := bt.dist, bt.pow
	for len(e1) < n {
		for range k {
			if bt.hi < b {
				bt.hi++
			}
			for x := bt.hi; x >= 1; x-- {
				dist[x] = dist[x]*float64(x)/b + dist[x-1]*float64(b-x+1)/b
			}
			dist[0] = 0
		}
		s1, s2 := 0.0, 0.0
		for x := 0; x <= bt.hi; x++ {
			s1 += dist[x] * pow[x]
			s2 += dist[x] * pow[x] * pow[x]
		}
		e1, e2 = append(e1, s1), append(e2, s2)
	}
	t = &blockMoments{e1: e1, e2: e2}
	bt.snap.Store(t)
	return t
}
