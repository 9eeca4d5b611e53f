package bench

import (
	"math"
	"slices"
	"testing"

	"github.com/bloomery/bloom"

	boom "github.com/tylertreat/BoomFilters"
)

// boomModel is BoomFilters' growth rule as its source states it, from its
// exported sizing functions: sub-filter i is sized for the hint at rate
// p·r^i, k = OptimalK partitions of s = ⌈OptimalM/k⌉ bits each, and Add
// opens the next one when the last one's estimated fill 1 − e^(−count/s)
// reaches 1/2, that is after ⌈s·ln 2⌉ items.
func boomModel(hint uint, p float64, items uint64) ScalableShape {
	var sh ScalableShape
	for i := 0; ; i++ {
		fp := p * math.Pow(BoomTightening, float64(i))
		m, k := boom.OptimalM(hint, fp), boom.OptimalK(fp)
		s := uint64(math.Ceil(float64(m) / float64(k)))
		sh.Filters++
		sh.Bytes += uint64(k) * ((s + 7) / 8)
		full := uint64(math.Ceil(float64(s) * math.Ln2))
		if items <= full {
			sh.SubItems = append(sh.SubItems, items)
			sh.Items += items
			return sh
		}
		sh.SubItems = append(sh.SubItems, full)
		sh.Items += full
		items -= full
	}
}

// TestScalableAdapters fills both scalable filters with n keys, then 3n,
// and checks for false negatives, item counts, sub-filters and memory
// (BoomFilters' dump against boomModel).
func TestScalableAdapters(t *testing.T) {
	const n, p = 20_000, 0.01
	keys := Keys(3, 3*n)
	for _, name := range ScalableLibNames {
		l, err := NewScalableLib(name, n, p, bloom.Growth{})
		if err != nil {
			t.Fatal(err)
		}
		for _, upto := range []int{n, 3 * n} {
			if err := l.AddFlat(keys[:upto*KeySize]); err != nil { // re-adding the first n is harmless
				t.Fatalf("%s: %v", name, err)
			}
			if c := l.TestFlat(keys[:upto*KeySize]); c != upto {
				t.Errorf("%s at %d: %d false negatives", name, upto, upto-c)
			}
			if c := l.TestAll(Split(keys[:upto*KeySize])); c != upto {
				t.Errorf("%s at %d: TestAll found %d", name, upto, c)
			}
			sh, err := l.Shape()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			t.Logf("%s at %d keys: %+v", name, upto, sh)
			switch name {
			case OursScalable:
				// A duplicate-looking new key (false positive) is not
				// counted, so Items may fall a little short.
				if sh.Items > uint64(upto) || sh.Items < uint64(upto)*99/100 {
					t.Errorf("%s at %d: %d items", name, upto, sh.Items)
				}
				if upto == n && sh.Filters != 1 {
					t.Errorf("%s at exactly n: %d sub-filters, want 1", name, sh.Filters)
				}
				if upto > n && sh.Filters < 2 {
					t.Errorf("%s at %d: %d sub-filters, want growth", name, upto, sh.Filters)
				}
			case BoomScalable:
				// BoomFilters counts every Add, also the repeated first n.
				adds := uint64(upto)
				if upto > n {
					adds += n
				}
				want := boomModel(n, p, adds)
				if sh.Filters != want.Filters || sh.Bytes != want.Bytes || sh.Items != adds || !slices.Equal(sh.SubItems, want.SubItems) {
					t.Errorf("%s after %d adds: %+v, model %+v", name, adds, sh, want)
				}
			}
		}
	}
}

// TestBoomOpensEarly pins what the comparison reports: at p = 0.01
// BoomFilters opens its second sub-filter after about 0.95 n items and so
// holds two full-size bit arrays at exactly n.
func TestBoomOpensEarly(t *testing.T) {
	const n, p = 1_000_000, 0.01
	sh := boomModel(n, p, n)
	if sh.Filters != 2 || sh.SubItems[0] < n*94/100 || sh.SubItems[0] > n*96/100 {
		t.Errorf("model at n: %+v", sh)
	}
	one := boomModel(n, p, 1)
	if r := float64(sh.Bytes) / float64(one.Bytes); r < 2 || r > 2.1 {
		t.Errorf("memory at n / memory of the first sub-filter = %.3f", r)
	}
}
