package bloom

import (
	"fmt"
	"testing"
)

// TestFPRScalable grows scalable filters from capacity 100 to 10^6 items
// (14 sub-filters) and measures the compound false-positive rate with
// never-inserted keys: its 99% upper confidence bound must be at or below
// p, and no inserted item may test absent.
func TestFPRScalable(t *testing.T) {
	if raceEnabled {
		t.Skip("statistical accuracy tests run in make test's race-free pass")
	}
	const n = 1_000_000
	for _, layout := range []Layout{Blocked, Classic} {
		for _, p := range []float64{0.01, 0.001} {
			t.Run(fmt.Sprintf("%s/p=%g", layout, p), func(t *testing.T) {
				t.Parallel()
				s, err := NewScalable(100, p, WithLayout(layout))
				if err != nil {
					t.Fatal(err)
				}
				ks := keySets[1] // sequential IDs: the adversarial case
				buf := make([]byte, 128)
				for i := range uint64(n) {
					if _, err := s.Add(ks.key(buf, i)); err != nil {
						t.Fatal(err)
					}
				}
				for i := range uint64(n) {
					if !s.Test(ks.key(buf, i)) {
						t.Fatalf("false negative: %q", ks.key(buf, i))
					}
				}
				if s.NumFilters() < 10 {
					t.Fatalf("%d sub-filters, want at least 10", s.NumFilters())
				}
				expected := s.EstimatedFPR()
				probes := probesFor(expected, p, 0)
				var fp uint64
				for i := uint64(n); i < n+probes; i++ {
					if s.Test(ks.key(buf, i)) {
						fp++
					}
				}
				checkRate(t, fmt.Sprintf("%d sub-filters, %d items, %.2f bits/item", s.NumFilters(), s.Count(), float64(s.Bytes()*8)/n),
					fp, probes, p, "estimate", expected)
			})
		}
	}
}
