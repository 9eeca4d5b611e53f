package bloom

import "math"

// The model of the classic layout: k independent probes into m bits.

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
	l1 := t * math.Log1p(-1/m)
	e1 := math.Exp(l1)                   // P(a given bit is still 0)
	e2 := math.Exp(t * math.Log1p(-2/m)) // P(two given bits are still 0)
	varX = m*(m-1)*e2 + m*e1 - m*m*e1*e1
	// 1 − e1 by expm1: exact also when the fill is below 2^-53 (a huge m
	// for a tiny rate), where 1 − e1 would round to 0.
	return -math.Expm1(l1), math.Max(varX, 0)
}

// classicSD is realizedSD for the classic layout: k·q^(k−1)·sd(X)/m.
func classicSD(m float64, k int, n float64) float64 {
	q, varX := classicMoments(m, k, n)
	if q <= 0 {
		return 0
	}
	return float64(k) * math.Pow(q, float64(k)-1) * math.Sqrt(varX) / m
}

// classicEval returns ln h at u = −ln m (m ≥ 64: below, the filter's
// smallest size, h stays at its value there) and an approximate slope,
// that of ln q^k: k·x·e^(−x)/q for x = kn/m.
func (g sizeGoal) classicEval(k int, u float64) (float64, float64) {
	m := math.Max(math.Exp(-u), 64)
	q, varX := classicMoments(m, k, g.n)
	if q <= 0 {
		return math.Inf(-1), math.NaN()
	}
	fk := float64(k)
	qk1 := math.Pow(q, fk-1)
	f := math.Min(qk1*q*(1+fk*(fk-1)/2*varX/(m*m*q*q)), 1) // classicFPR
	gv := f + g.z*fk*qk1*math.Sqrt(varX)/m                 // f + z·classicSD
	slope := fk * -math.Log1p(-q) * (1 - q) / q
	return g.ln(f, slope*f, gv, slope*gv)
}

// maxWords is the most 64-bit words of a filter whose bit count fits a
// uint64 with room to spare.
const maxWords = (1<<64 - 1<<11) / 64

// solveClassic returns the smallest number of 64-bit words and its k
// that meet g, or words = 0 if more than maxWords would be needed.
func (g sizeGoal) solveClassic() (words uint64, k int) {
	k0 := min(max(int(math.Round(-math.Log2(g.t))), 1), MaxK)
	// First-order closed form for k0: (1 − e^(−kn/m))^k = t.
	m0 := -float64(k0) * g.n / math.Log1p(-math.Exp(math.Log(g.t)/float64(k0)))
	if !(m0 > 0) || math.IsInf(m0, 0) {
		m0 = 64
	}
	k, u, ok := searchK(g.classicEval, k0, -math.Log(m0), -math.Log(64), false)
	if !ok || math.Exp(-u)/64 > maxWords {
		return 0, 0
	}
	w := uint64(math.Max(1, math.Ceil(math.Exp(-u)/64)))
	uOf := func(w uint64) float64 { return -math.Log(64 * float64(w)) }
	holds := func(k int, w uint64) bool {
		phi, _ := g.classicEval(k, uOf(w))
		return phi <= 0
	}
	if w = nudge(w, maxWords, func(w uint64) bool { return holds(k, w) }, uOf, u); w == 0 {
		return 0, 0
	}
	if w == 1 {
		k = fewestProbes(k, func(k int) bool { return holds(k, w) })
	}
	return w, k
}
