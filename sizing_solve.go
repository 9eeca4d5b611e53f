package bloom

import "math"

// How Size finds a geometry (see Size for what it guarantees).
//
// For each k the constraint h ≤ 1 is solved for one real unknown, u, on
// which h increases: u = ln λ (items per block) for the blocked layout,
// u = −ln m for the classic one. h is the larger of F/t and G/p, with F
// the model's expected rate, t = p^(1+margin) and G = F + realizationZ·sd
// (the spread of one filter's rate, which shrinks as 1/√blocks); so one
// root covers both the margin and the small-n realization bound, with the
// number of blocks (or bits) n·512/λ (or m) as a real number. Newton's
// method on ln h, kept inside a bracket (a bisection step whenever it
// would leave it), finds the root in a handful of evaluations. The best k
// is found by walking from a first guess while the root improves (see
// searchK): the optimum over real sizes is unimodal in k. The integer
// result is the ceiling of the best real one, checked, and nudged by one
// block (or word) until it is the smallest integer size that holds; as
// the ceiling of the largest root, it is the smallest over all k too.

// rootTolerance is the precision of solveIncreasing, as a width in u
// (relative in λ or m): the integer size from the root is then checked
// exactly.
const rootTolerance = 1e-13

// solveIncreasing returns the largest u ≤ uMax (to rootTolerance) with
// φ(u) ≤ 0, for φ increasing in u, starting at u0; eval returns φ(u) and
// its slope dφ/du. With exact false the slope is only a first guess, and
// the secant through the last two points replaces it. When Newton's
// method converges from above the root, the point just below it is
// returned without a last evaluation. ok is false if no u with φ(u) ≤ 0
// was found.
func solveIncreasing(eval func(u float64) (phi, slope float64), u0, uMax float64, exact bool) (float64, bool) {
	const maxStep = 20 // at most a factor e^20 per unbracketed step
	lo, hi := math.Inf(-1), math.Inf(1)
	u, uPrev, phiPrev := min(u0, uMax), math.NaN(), math.NaN()
	for range 200 {
		phi, slope := eval(u)
		if phi <= 0 {
			if u >= uMax {
				return u, true
			}
			lo = u
		} else {
			hi = u
		}
		tol := rootTolerance * max(1, math.Abs(u))
		if hi-lo <= tol {
			break
		}
		if s := (phi - phiPrev) / (u - uPrev); !exact && s > 0 && !math.IsInf(phi, 0) {
			slope = s
		}
		uPrev, phiPrev = u, phi
		next := u - phi/slope
		if !(slope > 0) || math.IsNaN(next) {
			next = u + math.Copysign(maxStep, -phi) // φ = −Inf is fine: up
		}
		if math.Abs(next-u) < tol { // converged
			if phi <= 0 {
				return u, true
			}
			// Just below the root, not evaluated: the callers check the
			// integer size they derive from it.
			return max(lo, min(next, u)-tol/4), true
		}
		switch {
		case math.IsInf(lo, 0) || math.IsInf(hi, 0):
			next = min(max(next, u-maxStep), u+maxStep)
		case next <= lo || next >= hi:
			next = lo + (hi-lo)/2
		}
		u = min(next, uMax)
	}
	return lo, !math.IsInf(lo, 0)
}

// searchK returns the k in [1, MaxK] whose root u_k (the largest u ≤ uMax
// with eval(k, u) ≤ 0) is largest, and u_k, walking from k0. The walk
// compares neighbours by the Newton estimate of their root from one
// evaluation at the current root (u_k − φ/φ'), solves the best of them,
// and repeats on the far side of it until no neighbour is better. ok is
// false if k0 has no root.
func searchK(eval func(k int, u float64) (float64, float64), k0 int, u0, uMax float64, exact bool) (int, float64, bool) {
	solve := func(k int, u float64) (float64, bool) {
		return solveIncreasing(func(u float64) (float64, float64) { return eval(k, u) }, u, uMax, exact)
	}
	uBest, ok := solve(k0, u0)
	if !ok {
		return 0, 0, false
	}
	bestK := k0
	// estimate returns the Newton estimate of k's root from uBest, or
	// −Inf if k is no better than bestK there.
	estimate := func(k int) float64 {
		phi, slope := eval(k, uBest)
		if !(phi < 0) {
			return math.Inf(-1)
		}
		if !(slope > 0) || math.IsInf(phi, 0) {
			return uBest
		}
		return min(uBest-phi/slope, uMax)
	}
	dirs := []int{1, -1}
	for range MaxK {
		cand, candU := 0, math.Inf(-1)
		for _, dir := range dirs {
			for k := bestK + dir; k >= 1 && k <= MaxK; k += dir {
				est := estimate(k)
				if est <= candU || math.IsInf(est, -1) {
					break
				}
				cand, candU = k, est
			}
			if cand != 0 {
				break // the other side is worse: the roots are unimodal in k
			}
		}
		if cand == 0 {
			break
		}
		u, ok := solve(cand, candU)
		if !ok || u <= uBest {
			break
		}
		// The side bestK is on now has only roots below the old best.
		dirs = dirs[:1]
		if dirs[0] = 1; cand < bestK {
			dirs[0] = -1
		}
		uBest, bestK = u, cand
	}
	return bestK, uBest, true
}

// sizeGoal is what a sizing must meet: expected rate at most t, and
// expected rate plus z standard deviations of one filter's rate at most
// p, for n items.
type sizeGoal struct {
	n, t, p, z float64
}

// ln returns ln h = ln max(F/t, G/p) for rate F and G = F + z·sd, and the
// slope of ln h from the slopes dF and dG of F and G.
func (g sizeGoal) ln(f, df, gv, dg float64) (float64, float64) {
	if f*g.p >= gv*g.t {
		return math.Log(f / g.t), df / f
	}
	return math.Log(gv / g.p), dg / gv
}

// blockedEval returns ln h at u = ln λ and its slope d ln h / du.
func (g sizeGoal) blockedEval(k int, u float64) (float64, float64) {
	lambda := math.Exp(u)
	if !(lambda > 0) {
		return math.Inf(-1), math.NaN()
	}
	if poissonTop(lambda) >= float64(fullBlock(k)) {
		return math.Log(blockedFPR(lambda, k) / max(g.t, g.p)), math.NaN() // rates near 1
	}
	s := blockedSums(lambda, k)
	f, df := s.s1, lambda*s.d1
	gv, dg := f, df
	if g.z > 0 {
		// sd² = V·λ/n (the variance of one block's rate V = s2 − s1², over
		// n/λ blocks) and d(V·λ)/dλ = V + λ·(d2 − 2·s1·d1).
		v := max(0, s.s2-s.s1*s.s1)
		sd := math.Sqrt(v * lambda / g.n)
		gv = f + g.z*sd
		if sd > 0 {
			dg = df + g.z*lambda*(v+lambda*(s.d2-2*s.s1*s.d1))/(2*g.n*sd)
		}
	}
	return g.ln(f, df, gv, dg)
}

// maxBlocks is the most blocks of a filter whose bit count fits a uint64
// with room to spare (as a float64).
const maxBlocks = (1<<64 - 1<<11) / BlockBits

// solveBlocked returns the smallest number of blocks and its k that meet
// g, or blocks = 0 if more than maxBlocks would be needed.
func (g sizeGoal) solveBlocked() (blocks uint64, k int) {
	// A first λ: about 512 / (bits per key), from the classic optimum.
	lambda0 := BlockBits * math.Ln2 * math.Ln2 / -math.Log(g.t)
	k, u, ok := searchK(g.blockedEval, blockedKGuess(g.t), math.Log(lambda0), math.Inf(1), true)
	if !ok || g.n/math.Exp(u) > maxBlocks {
		return 0, 0
	}
	b := uint64(math.Max(1, math.Ceil(g.n/math.Exp(u))))
	uOf := func(b uint64) float64 { return math.Log(g.n / float64(b)) }
	holds := func(k int, b uint64) bool {
		phi, _ := g.blockedEval(k, uOf(b))
		return phi <= 0
	}
	if b = nudge(b, maxBlocks, func(b uint64) bool { return holds(k, b) }, uOf, u); b == 0 {
		return 0, 0
	}
	if b == 1 {
		k = fewestProbes(k, func(k int) bool { return holds(k, b) })
	}
	return b, k
}

// fewestProbes returns the smallest k' ≤ k for which holds(k') is true,
// given holds(k). Size uses it for filters of the smallest size (one
// block or one word), which is often far more than they need, so that
// many k fit: the fewest probes make the fastest filter. (At larger sizes
// it keeps the k with the largest root, the lowest rate for the size.)
// The k that fit one size are contiguous (the roots are unimodal in k),
// so the walk down stops at the first that does not.
func fewestProbes(k int, holds func(int) bool) int {
	for k > 1 && holds(k-1) {
		k--
	}
	return k
}

// nudge returns the smallest size near b (blocks or words) for which
// holds is true, or 0 if that exceeds limit: up while it fails, then down
// while one less holds. The steps are 1 up to 2^40 and relative 2^-40
// beyond (where float64 would not tell b from b+1, and no filter that
// large can be allocated anyway).
//
// u(b) is the unknown of the solve at size b; sizes whose u is clearly
// above the root uRoot fail without an evaluation.
func nudge(b, limit uint64, holds func(uint64) bool, u func(uint64) float64, uRoot float64) uint64 {
	for !holds(b) {
		if b += 1 + b>>40; b > limit {
			return 0
		}
	}
	above := uRoot + 4*rootTolerance*max(1, math.Abs(uRoot))
	for range 16 { // the root is exact to 1e-13: a step or two at most
		d := 1 + b>>40
		if b <= d || u(b-d) > above || !holds(b-d) {
			break
		}
		b -= d
	}
	return b
}

// blockedKGuess is a first guess of the best k for the blocked layout at
// rate t: the optimum at p = 10^-d is close to a straight line in d,
// flattening at low rates (docs/DESIGN.md §3's table: 3, 6, 9, 12, 14, 16, 18 for
// d = 1 … 7). The search walks from it to the true optimum.
func blockedKGuess(t float64) int {
	d := -math.Log10(t)
	k := 3 * d
	if d > 4 {
		k = 12 + 2*(d-4)
	}
	return min(max(int(math.Round(k)), 1), MaxK)
}
