package bloom

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// maxExtraBits is how much larger than the slow exact solver's result
// (slowSize) a fast Size may be: 0.5% of its bits. (It is never larger on
// the grid below; it is often a block or a word smaller, because it meets
// the conditions with the integer size directly instead of tightening the
// target in 2% steps.)
const maxExtraBits = 0.005

// TestFPRSizeAgainstExactSolver compares Size with the slow exact solver
// over a wide grid of n, p and layouts, plus random rates: the fast result
// must meet both conditions under the oracle's own model (expected rate at
// most p^(1+margin), and expected rate plus realizationZ standard
// deviations at most p) and must not use more than maxExtraBits more
// memory. It runs in make test's race-free accuracy pass (the oracle takes
// up to a tenth of a second per size); under the race detector a few
// points only.
func TestFPRSizeAgainstExactSolver(t *testing.T) {
	ns := []uint64{1, 2, 3, 5, 10, 30, 100, 300, 1000, 3000, 1e4, 1e5, 1e6, 1e7, 1e9}
	ps := []float64{0.5, 0.3, 0.1, 0.05, 0.01, 0.005, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12}
	type point struct {
		n uint64
		p float64
	}
	var grid []point
	for _, n := range ns {
		for _, p := range ps {
			grid = append(grid, point{n, p})
		}
	}
	r := rand.New(rand.NewPCG(11, 24))
	for range 100 {
		n := uint64(math.Exp(r.Float64() * math.Log(1e9)))
		p := math.Exp(math.Log(1e-12) + r.Float64()*(math.Log(0.5)-math.Log(1e-12)))
		grid = append(grid, point{max(n, 1), p})
	}
	if raceEnabled {
		grid = []point{{1, 0.01}, {100, 0.01}, {100, 1e-7}, {1e6, 0.001}}
	}
	for _, layout := range []Layout{Blocked, Classic} {
		margin := classicMarginExp
		if layout == Blocked {
			margin = blockedMarginExp
		}
		worst, best := 0.0, 0.0
		for _, pt := range grid {
			got, err := Size(pt.n, pt.p, layout)
			if err != nil {
				t.Errorf("Size(%d, %g, %s): %v", pt.n, pt.p, layout, err)
				continue
			}
			want := slowSize(pt.n, pt.p, layout)
			name := fmt.Sprintf("%s n=%d p=%g: fast m=%d k=%d, exact m=%d k=%d", layout, pt.n, pt.p, got.Bits, got.K, want.Bits, want.K)
			f := slowExpected(layout, got.Bits, got.K, pt.n)
			if hi := f + realizationZ*slowSD(layout, got.Bits, got.K, pt.n); !(hi <= pt.p) {
				t.Errorf("%s: expected rate + %.2f sd = %g > p", name, realizationZ, hi)
			}
			if target := math.Pow(pt.p, 1+margin); !(f <= target) {
				t.Errorf("%s: expected rate %g > p^(1+%g) = %g", name, f, margin, target)
			}
			extra := float64(got.Bits)/float64(want.Bits) - 1
			if extra > maxExtraBits {
				t.Errorf("%s: %.2f%% more bits than the exact solver", name, 100*extra)
			}
			worst, best = max(worst, extra), min(best, extra)
		}
		t.Logf("%s: %d sizes; fast/exact bits between %+.3f%% and %+.3f%%", layout, len(grid), 100*best, 100*worst)
	}
}

// TestBlockedModelAgainstSlow compares the blocked model's Poisson sums
// (weights by recurrence, stopping when the rest is negligible, tables
// extended in place) with the slow sums (every weight by Lgamma and Exp,
// every load up to lambda + 15 sd, tables rebuilt): the expected rate
// agrees to 1e-12 from nearly empty blocks to overfilled ones, and the
// spread to 1e-9 wherever the rate is at most 0.5.
func TestBlockedModelAgainstSlow(t *testing.T) {
	for _, k := range []int{1, 2, 3, 6, 7, 12, 20, 30, 64} {
		for _, lambda := range []float64{1e-9, 0.01, 0.5, 1, 3.7, 10, 42.5, 100, 350, 1000, 5000} {
			fast, slow := blockedFPR(lambda, k), slowBlockedFPR(lambda, k)
			if d := math.Abs(fast - slow); d > 1e-12*slow && d > 1e-300 {
				t.Errorf("k=%d lambda=%g: rate %.17g, slow model %.17g", k, lambda, fast, slow)
			}
			const m, blocks = 512 * 1000, 1000.0
			n := uint64(lambda * blocks)
			if n == 0 || fast > 0.5 {
				continue // near 1, the variance is all cancellation, in both
			}
			fastSD, slowSD := realizedSD(Blocked, m, uint32(k), n), slowSD(Blocked, m, uint32(k), n)
			if d := math.Abs(fastSD - slowSD); d > 1e-9*slowSD && d > 1e-300 {
				t.Errorf("k=%d n=%d in %g blocks: sd %.17g, slow model %.17g", k, n, blocks, fastSD, slowSD)
			}
		}
	}
}
