package bloom

import (
	"fmt"
	"math"
	"sync"
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
func Size(n uint64, p float64, layout Layout) (Sizing, error) {
	if err := checkNP(n, p); err != nil {
		return Sizing{}, err
	}
	var target float64
	optimal := optimalClassic
	switch layout {
	case Blocked:
		target, optimal = math.Pow(p, 1+blockedMarginExp), optimalBlocked
	case Classic:
		target = math.Pow(p, 1+classicMarginExp)
	default:
		return Sizing{}, fmt.Errorf("%w: %d", ErrInvalidLayout, layout)
	}
	var m uint64
	var k uint32
	for range 200 {
		m, k = optimal(float64(n), target)
		if m == 0 {
			return Sizing{}, fmt.Errorf("%w: n=%d p=%g needs more than 2^64 bits", ErrTooLarge, n, p)
		}
		hi := ExpectedFPR(layout, m, k, n) + realizationZ*realizedSD(layout, m, k, n)
		if hi <= p {
			break
		}
		target *= math.Min(p/hi, 0.98)
	}
	return Sizing{Layout: layout, N: n, P: p, Bits: m, K: k}, nil
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
	case Classic:
		q, varX := classicMoments(float64(m), int(k), float64(n))
		if q <= 0 {
			return 0
		}
		return float64(k) * math.Pow(q, float64(k)-1) * math.Sqrt(varX) / float64(m)
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
// blocked layout with k > MaxK it returns the bound 1.
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
	case Classic:
		return classicFPR(float64(m), int(k), float64(n))
	}
	return 1
}

// ---- classic layout -------------------------------------------------------

// classicFPR is the expected rate of k independent probes into m bits after
// n items: E[(X/m)^k] for X the number of set bits, to second order in the
// variance of X (the plain (1-e^{-kn/m})^k is optimistic for small m).
func classicFPR(m float64, k int, n float64) float64 {
	q, varX := classicMoments(m, k, n)
	if q <= 0 {
		return 0
	}
	fk := float64(k)
	r := math.Pow(q, fk) * (1 + fk*(fk-1)/2*varX/(m*m*q*q))
	return math.Min(r, 1)
}

// classicMoments returns the expected fill q = E[X]/m and Var[X] of the
// number X of bits set by k·n uniform probes into m bits.
func classicMoments(m float64, k int, n float64) (q, varX float64) {
	t := float64(k) * n
	e1 := math.Exp(t * math.Log1p(-1/m)) // P(a given bit is still 0)
	e2 := math.Exp(t * math.Log1p(-2/m)) // P(two given bits are still 0)
	varX = m*(m-1)*e2 + m*e1 - m*m*e1*e1
	return 1 - e1, math.Max(varX, 0)
}

// optimalClassic returns the smallest m (a multiple of 64) and its best k
// with classicFPR(m, k, n) <= p, or m = 0 if that needs 2^64 bits or more.
func optimalClassic(n, p float64) (uint64, uint32) {
	bestM, bestK := math.Inf(1), 0
	for k := 1; k <= MaxK; k++ {
		// Closed form for the first-order model, then step up until the
		// corrected model is satisfied too.
		// ln(1 - p^(1/k)), accurate even when p^(1/k) is tiny
		lx := math.Log1p(-math.Exp(math.Log(p) / float64(k)))
		m := math.Ceil(-float64(k)*n/lx/64) * 64
		if !(m > 0) || math.IsInf(m, 0) {
			continue
		}
		if m > bestM*1.5 {
			if k > 2 && m > bestM*4 {
				break
			}
			continue
		}
		for classicFPR(m, k, n) > p {
			m += math.Max(64, math.Ceil(m*0.001/64)*64)
		}
		if m < bestM {
			bestM, bestK = m, k
		}
	}
	if bestM >= 1<<64-1<<11 {
		return 0, 0
	}
	return uint64(bestM), uint32(bestK)
}

// ---- blocked layout -------------------------------------------------------

// blockedFPR is the expected rate of the blocked layout when items per block
// follow Poisson(lambda): sum_i Pois(i; lambda) * E[(X_i/512)^k], with X_i
// the distinct bits set by i*k uniform probes into 512 bits. Real block
// loads are binomial, which has less spread, so this is conservative.
func blockedFPR(lambda float64, k int) float64 {
	if lambda <= 0 {
		return 0
	}
	top := poissonTop(lambda)
	if full := fullBlock(k); top >= float64(full) {
		return overfilledFPR(lambda, k, full)
	}
	e := blockTable(k, int(top)+1)
	sum := 0.0
	forPoisson(lambda, len(e), func(i int, w float64) { sum += w * e[i] })
	return math.Min(sum, 1)
}

// poissonTop is a load beyond which the Poisson(lambda) weights are below
// 1e-40: lambda + 15 sd. (A float: for huge lambda it does not fit an int.)
func poissonTop(lambda float64) float64 { return lambda + 15*math.Sqrt(lambda) + 40 }

// forPoisson calls fn(i, Pois(i; lambda)) for i in [0, n), leaving out the
// weights that underflow (e^-745) and stopping once they do past the mode.
func forPoisson(lambda float64, n int, fn func(i int, w float64)) {
	logL := math.Log(lambda)
	for i := range n {
		lg, _ := math.Lgamma(float64(i) + 1)
		w := float64(i)*logL - lambda - lg
		if w < -745 {
			if float64(i) > lambda {
				return
			}
			continue
		}
		fn(i, math.Exp(w))
	}
}

// fullBlock is a number of items beyond which a block is full for all
// practical purposes: after i*k >= 45*512 probes a given bit is unset with
// probability (1-1/512)^(i*k) < e^-45, so 1 - E[(X_i/512)^k] < k*e^-45 < 1e-17.
func fullBlock(k int) int {
	return (45*BlockBits+k-1)/k + 1
}

// overfilledFPR is blockedFPR for a lambda so large that the Poisson sum
// would run past fullBlock(k): 1 - sum_{i<full} Pois(i; lambda)(1 - e[i]),
// treating e[i] as 1 from full on. It keeps the table (and the time) bounded
// for any lambda; the rate is then close to 1, so the subtraction loses no
// relative precision.
func overfilledFPR(lambda float64, k, full int) float64 {
	e := blockTable(k, full)
	deficit := 0.0
	forPoisson(lambda, len(e), func(i int, w float64) { deficit += w * (1 - e[i]) })
	return math.Max(0, math.Min(1, 1-deficit))
}

var blockTables struct {
	sync.Mutex
	byK map[int]*blockMoments
}

// blockMoments holds, for i items in one block, e1[i] = E[(X_i/512)^k] (the
// block's expected rate) and e2[i] = E[(X_i/512)^2k] (its second moment).
type blockMoments struct{ e1, e2 []float64 }

// blockTable returns e[i] = E[(X_i/512)^k] for i in [0, n), computing the
// distribution of X by dynamic programming over k*i throws (cached per k).
func blockTable(k, n int) []float64 { return blockTableMoments(k, n).e1[:n] }

func blockTableMoments(k, n int) *blockMoments {
	blockTables.Lock()
	defer blockTables.Unlock()
	if t := blockTables.byK[k]; t != nil && len(t.e1) >= n {
		return t
	}
	const b = BlockBits
	pow := make([]float64, b+1)
	for x := range pow {
		pow[x] = math.Pow(float64(x)/b, float64(k))
	}
	dist := make([]float64, b+1)
	dist[0] = 1
	hi := 0 // dist[x] == 0 for x > hi
	t := &blockMoments{e1: make([]float64, n), e2: make([]float64, n)}
	for i := 1; i < n; i++ {
		for range k {
			if hi < b {
				hi++
			}
			for x := hi; x >= 1; x-- {
				dist[x] = dist[x]*float64(x)/b + dist[x-1]*float64(b-x+1)/b
			}
			dist[0] = 0
		}
		s1, s2 := 0.0, 0.0
		for x := 0; x <= hi; x++ {
			s1 += dist[x] * pow[x]
			s2 += dist[x] * pow[x] * pow[x]
		}
		t.e1[i], t.e2[i] = s1, s2
	}
	if blockTables.byK == nil {
		blockTables.byK = make(map[int]*blockMoments)
	}
	blockTables.byK[k] = t
	return t
}

// blockedVar is the variance of one block's rate when its load is
// Poisson(lambda): E[g²] − E[g]² over loads and set bits. It is 0 where
// blockedFPR uses the overfilled bound (rates near 1, never a sizing
// target).
func blockedVar(lambda float64, k int) float64 {
	top := poissonTop(lambda)
	if lambda <= 0 || top >= float64(fullBlock(k)) {
		return 0
	}
	t := blockTableMoments(k, int(top)+1)
	s1, s2 := 0.0, 0.0
	forPoisson(lambda, int(top)+1, func(i int, w float64) {
		s1 += w * t.e1[i]
		s2 += w * t.e2[i]
	})
	return math.Max(0, s2-s1*s1)
}

// optimalBlocked returns the smallest m (a multiple of 512) and its best k
// with blockedFPR(n*512/m, k) <= p, or m = 0 if that needs 2^64 bits or more.
func optimalBlocked(n, p float64) (uint64, uint32) {
	// The blocked layout never beats the classic one, which bounds lambda.
	mc, kc := optimalClassic(n, p)
	if mc == 0 {
		return 0, 0
	}
	lambdaMax := n * BlockBits / float64(mc) * 1.01
	bestLambda, bestK := 0.0, 0
	worse := 0
	for k := 1; k <= MaxK && k <= int(kc)+2; k++ {
		if blockedFPR(1e-3, k) > p { // k probes cannot reach p at all
			continue
		}
		lo, hi := 0.0, lambdaMax
		for range 60 {
			mid := (lo + hi) / 2
			if blockedFPR(mid, k) <= p {
				lo = mid
			} else {
				hi = mid
			}
		}
		if lo > bestLambda {
			bestLambda, bestK, worse = lo, k, 0
		} else if worse++; worse >= 2 {
			break
		}
	}
	if bestLambda == 0 {
		return 0, 0
	}
	blocks := math.Ceil(n / bestLambda)
	if blocks*BlockBits >= 1<<64-1<<11 {
		return 0, 0
	}
	return uint64(blocks) * BlockBits, uint32(bestK)
}

// Validate reports whether s is a geometry a filter can have: a known
// layout, bits a positive multiple of 64 (512 for Blocked), 1 ≤ K ≤ MaxK,
// N > 0 and 0 < P < 1.
func (s Sizing) Validate() error { return checkSizing(s) }
