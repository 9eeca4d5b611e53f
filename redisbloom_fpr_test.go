package bloom

import (
	"fmt"
	"testing"
)

// TestFPRRedisBloom measures the false-positive rate of filters in the
// RedisBloom layout, which have RedisBloom's rate, not Bloomery's
// guarantee (docs/DESIGN.md §10), with never-inserted sequential keys:
//   - scalable filters of large sub-filters, grown to 4 of them: the 99%
//     upper confidence bound at or below p (their sub-filters get p/2,
//     p/4, …);
//   - a large non-scaling filter (its one sub-filter at p, with
//     k = ⌈ln 2·bpe⌉ probes, a little above the optimum): at or below
//     its model rate + 5%, which is itself within 1% of p;
//   - small non-scaling filters, where RedisBloom's double hashing
//     (a + i·b) mod m degenerates for b sharing factors with m: at most
//     5 p (the figures are in docs/DESIGN.md §10).
//
// No inserted item may test absent.
func TestFPRRedisBloom(t *testing.T) {
	if raceEnabled {
		t.Skip("statistical accuracy tests run in make test's race-free pass")
	}
	cases := []struct {
		n0, items  uint64
		p          float64
		nonScaling bool
		bound      float64 // × p, on the 99% upper bound; 0: the model rate + 5%
	}{
		{n0: 20_000, items: 300_000, p: 0.01, bound: 1},
		{n0: 20_000, items: 300_000, p: 0.001, bound: 1},
		{n0: 200_000, items: 200_000, p: 0.01, nonScaling: true},
		{n0: 100, items: 100, p: 0.001, nonScaling: true, bound: 5},
		{n0: 100, items: 100, p: 0.0001, nonScaling: true, bound: 5},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("n0=%d/items=%d/p=%g", c.n0, c.items, c.p), func(t *testing.T) {
			t.Parallel()
			s, err := NewScalable(c.n0, c.p, WithLayout(RedisBloom), WithGrowth(Growth{NonScaling: c.nonScaling}))
			if err != nil {
				t.Fatal(err)
			}
			ks, buf := keySets[1], make([]byte, 128)
			for i := range c.items {
				if _, err := s.Add(ks.key(buf, i)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range c.items {
				if !s.Test(ks.key(buf, i)) {
					t.Fatalf("false negative: %q", ks.key(buf, i))
				}
			}
			expected, bound := s.EstimatedFPR(), c.bound*c.p
			if c.bound == 0 {
				f := s.filters()[0]
				model := f.Sizing().FPRAt(c.items)
				if model > 1.01*c.p {
					t.Fatalf("model rate %.4g, more than 1%% above p", model)
				}
				expected, bound = model, 1.05*model
			}
			probes := max(probesFor(expected, bound, 0), uint64(1000/c.p))
			var fp uint64
			for i := c.items; i < c.items+probes; i++ {
				if s.Test(ks.key(buf, i)) {
					fp++
				}
			}
			checkRate(t, fmt.Sprintf("%d sub-filters, %.2f bits/item", s.NumFilters(), float64(s.Bytes()*8)/float64(c.items)),
				fp, probes, bound, "estimate", expected)
			t.Logf("measured rate %.3f p", float64(fp)/float64(probes)/c.p)
		})
	}
}
