package bloom

import (
	"math"
	"sync"
)

// The slow exact sizing, as Size computed it before it was made fast: the
// oracle the fast solver is tested against. It shares nothing with the
// fast code but the classic closed forms (classicFPR, classicMoments):
// its own block tables, Poisson weights by Lgamma and Exp per term, a
// 60-step bisection per k, and the old loop that tightens the target
// until the realization margin holds.

// slowSize is the old Size.
func slowSize(n uint64, p float64, layout Layout) Sizing {
	target := math.Pow(p, 1+classicMarginExp)
	optimal := slowOptimalClassic
	if layout == Blocked {
		target, optimal = math.Pow(p, 1+blockedMarginExp), slowOptimalBlocked
	}
	var m uint64
	var k uint32
	for range 200 {
		m, k = optimal(float64(n), target)
		if m == 0 {
			return Sizing{}
		}
		hi := slowExpected(layout, m, k, n) + realizationZ*slowSD(layout, m, k, n)
		if hi <= p {
			break
		}
		target *= math.Min(p/hi, 0.98)
	}
	return Sizing{Layout: layout, N: n, P: p, Bits: m, K: k}
}

// slowExpected is the old ExpectedFPR.
func slowExpected(layout Layout, m uint64, k uint32, n uint64) float64 {
	if layout == Classic {
		return classicFPR(float64(m), int(k), float64(n))
	}
	return slowBlockedFPR(float64(n)*BlockBits/float64(m), int(k))
}

// slowSD is the old realizedSD.
func slowSD(layout Layout, m uint64, k uint32, n uint64) float64 {
	if layout == Classic {
		q, varX := classicMoments(float64(m), int(k), float64(n))
		if q <= 0 {
			return 0
		}
		return float64(k) * math.Pow(q, float64(k)-1) * math.Sqrt(varX) / float64(m)
	}
	blocks := float64(m / BlockBits)
	lambda := float64(n) / blocks
	top := lambda + 15*math.Sqrt(lambda) + 40
	if top >= float64(fullBlock(int(k))) {
		return 0
	}
	t := slowTable(int(k), int(top)+1)
	s1, s2 := 0.0, 0.0
	slowPoisson(lambda, int(top)+1, func(i int, w float64) {
		s1 += w * t.e1[i]
		s2 += w * t.e2[i]
	})
	return math.Sqrt(math.Max(0, s2-s1*s1) / blocks)
}

// slowPoisson calls fn(i, Pois(i; lambda)) for i in [0, n), each weight
// from Lgamma and Exp, leaving out those that underflow.
func slowPoisson(lambda float64, n int, fn func(i int, w float64)) {
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

var slowTables struct {
	sync.Mutex
	byK map[int]*blockMoments
}

// slowTable is the old blockTableMoments: the whole dynamic program again
// whenever a longer table is needed.
func slowTable(k, n int) *blockMoments {
	slowTables.Lock()
	defer slowTables.Unlock()
	if t := slowTables.byK[k]; t != nil && len(t.e1) >= n {
		return t
	}
	const b = BlockBits
	pow := make([]float64, b+1)
	for x := range pow {
		pow[x] = math.Pow(float64(x)/b, float64(k))
	}
	dist := make([]float64, b+1)
	dist[0] = 1
	hi := 0
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
	if slowTables.byK == nil {
		slowTables.byK = make(map[int]*blockMoments)
	}
	slowTables.byK[k] = t
	return t
}

// slowOptimalClassic is the old optimalClassic.
func slowOptimalClassic(n, p float64) (uint64, uint32) {
	bestM, bestK := math.Inf(1), 0
	for k := 1; k <= MaxK; k++ {
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

// slowOptimalBlocked is the old optimalBlocked.
func slowOptimalBlocked(n, p float64) (uint64, uint32) {
	mc, kc := slowOptimalClassic(n, p)
	if mc == 0 {
		return 0, 0
	}
	lambdaMax := n * BlockBits / float64(mc) * 1.01
	fpr := slowBlockedFPR
	bestLambda, bestK := 0.0, 0
	worse := 0
	for k := 1; k <= MaxK && k <= int(kc)+2; k++ {
		if fpr(1e-3, k) > p {
			continue
		}
		lo, hi := 0.0, lambdaMax
		for range 60 {
			mid := (lo + hi) / 2
			if fpr(mid, k) <= p {
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

// slowBlockedFPR is the old blockedFPR.
func slowBlockedFPR(lambda float64, k int) float64 {
	if lambda <= 0 {
		return 0
	}
	top := lambda + 15*math.Sqrt(lambda) + 40
	full := fullBlock(k)
	if top >= float64(full) {
		e := slowTable(k, full).e1
		deficit := 0.0
		slowPoisson(lambda, full, func(i int, w float64) { deficit += w * (1 - e[i]) })
		return math.Max(0, math.Min(1, 1-deficit))
	}
	e := slowTable(k, int(top)+1).e1
	sum := 0.0
	slowPoisson(lambda, int(top)+1, func(i int, w float64) { sum += w * e[i] })
	return math.Min(sum, 1)
}
