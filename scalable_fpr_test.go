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

// TestFPRScalableTiny measures small scalable filters, whose first
// sub-filters are classic (docs/DESIGN.md §5): initial capacity 1 to 1000
// at p = 0.1 to 1e-4, each grown past its capacity into a third
// sub-filter (5·n0 items: two full sub-filters, the third half full),
// with either error split and adversarial keys (sequential IDs, 8-byte
// counters). The rate of one tiny filter varies a lot with its items, so
// each case measures many filters, each with its own keys, and the
// compound rate over all of them (their expected rate) must have its 99%
// upper confidence bound at or below p.
func TestFPRScalableTiny(t *testing.T) {
	if raceEnabled {
		t.Skip("statistical accuracy tests run in make test's race-free pass")
	}
	for _, so := range []Growth{{}, {RedisBloom: true}} {
		for _, ks := range []keySet{keySets[1], keySets[3]} {
			for _, n0 := range []uint64{1, 3, 10, 30, 100, 300, 1000} {
				for _, p := range []float64{0.1, 0.01, 1e-3, 1e-4} {
					name := fmt.Sprintf("f=%g/%s/n0=%d/p=%g", map[bool]float64{false: DefaultFirstShare, true: 0.5}[so.RedisBloom], ks.name, n0, p)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						checkTinyScalableFPR(t, so, ks, n0, p)
					})
				}
			}
		}
	}
}

func checkTinyScalableFPR(t *testing.T, so Growth, ks keySet, n0 uint64, p float64) {
	items := 5 * n0
	count := max(20, 20_000/items)
	const stride = 1 << 32 // the keys of filter j start at j·stride
	buf := make([]byte, 128)
	fs := make([]*Scalable, count)
	var expected float64
	classic := 0
	for j := range fs {
		s, err := NewScalable(n0, p, WithGrowth(so))
		if err != nil {
			t.Fatal(err)
		}
		base := uint64(j) * stride
		for i := range items {
			if _, err := s.Add(ks.key(buf, base+i)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range items {
			if !s.Test(ks.key(buf, base+i)) {
				t.Fatalf("filter %d: false negative: %q", j, ks.key(buf, base+i))
			}
		}
		if s.NumFilters() < 2 { // fewer than 3 when items tested present as they came
			t.Fatalf("%d sub-filters: not grown", s.NumFilters())
		}
		if s.filters()[0].layout == Classic {
			classic++
		}
		expected += s.EstimatedFPR() / float64(count)
		fs[j] = s
	}
	if n0 <= 100 && classic == 0 {
		t.Fatalf("no classic first sub-filter at n0 = %d", n0)
	}
	probes := min(probesFor(min(expected, 0.9*p), p, 0), 8_000_000)
	per := (probes + uint64(count) - 1) / uint64(count)
	var fp uint64
	for j, s := range fs {
		base := uint64(j)*stride + items
		for i := range per {
			if s.Test(ks.key(buf, base+i)) {
				fp++
			}
		}
	}
	checkRate(t, fmt.Sprintf("%d filters of %d items, %d bytes each", count, items, fs[0].Bytes()),
		fp, per*uint64(count), p, "estimate", expected)
}
