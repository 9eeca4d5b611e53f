package bloom

import (
	"fmt"
	"math/bits"
	"testing"
)

// Tests of the description methods (describe.go).

// TestScalableDescription: InitialCap, Options, Layout and HashID give
// back what the filter was made with, Options remakes a filter that
// grows alike, and SubFilters adds up to the filter's totals with each
// sub-filter's bits counted.
func TestScalableDescription(t *testing.T) {
	tests := []struct {
		so   Growth
		opts []Option
		want Growth
	}{
		{Growth{}, nil, Growth{Expansion: 2, Tightening: DefaultTightening, FirstShare: DefaultFirstShare}},
		{Growth{Expansion: 4, RedisBloom: true}, []Option{WithLayout(Classic)}, Growth{Expansion: 4, Tightening: 0.5, FirstShare: 0.5}},
		{Growth{NonScaling: true, Tightening: 0.25}, []Option{WithKey(testKey)}, Growth{NonScaling: true, Tightening: 0.25, FirstShare: DefaultFirstShare}},
		{Growth{UniformLayout: true}, nil, Growth{Expansion: 2, Tightening: DefaultTightening, FirstShare: DefaultFirstShare, UniformLayout: true}},
		// A classic filter is uniform anyway: it reports false.
		{Growth{UniformLayout: true}, []Option{WithLayout(Classic)}, Growth{Expansion: 2, Tightening: DefaultTightening, FirstShare: DefaultFirstShare}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v", tt.so), func(t *testing.T) {
			s := grownScalable(t, 50, tt.so, tt.opts...) // fills the first
			for i := 50; i < 400 && !tt.so.NonScaling; i++ {
				s.AddString(fmt.Sprintf("key%d", i))
			}
			if got := s.Growth(); got != tt.want {
				t.Errorf("Options() = %+v, want %+v", got, tt.want)
			}
			first, layout := s.filters()[0], newConfig(tt.opts).layout
			if s.InitialCap() != 50 || s.Layout() != layout || s.HashID() != first.HashID() {
				t.Errorf("InitialCap %d, Layout %v, HashID %v; want 50, %v, %v", s.InitialCap(), s.Layout(), s.HashID(), layout, first.HashID())
			}
			again, err := NewScalable(s.InitialCap(), s.TargetFPR(), append([]Option{WithGrowth(s.Growth())}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 400 {
				again.AddString(fmt.Sprintf("key%d", i))
			}
			subs, remade := s.SubFilters(), again.SubFilters()
			if len(subs) != s.NumFilters() || len(subs) != len(remade) {
				t.Fatalf("%d sub-filters described, %d in the filter, %d remade", len(subs), s.NumFilters(), len(remade))
			}
			var items, capacity uint64
			for i, sub := range subs {
				f := s.filters()[i]
				if sub.Sizing != f.Sizing() || sub.Sizing != remade[i].Sizing || sub.Items != f.Inserted() {
					t.Errorf("sub-filter %d: %+v; the filter's %v with %d items, remade %v", i, sub, f.Sizing(), f.Inserted(), remade[i].Sizing)
				}
				var set uint64
				for _, w := range f.words() {
					set += uint64(bits.OnesCount64(w))
				}
				if sub.SetBits != set || set == 0 {
					t.Errorf("sub-filter %d: %d bits set, counted %d", i, sub.SetBits, set)
				}
				items += sub.Items
				capacity += sub.Sizing.N
			}
			if items != s.Count() || capacity != s.Cap() {
				t.Errorf("sub-filters hold %d items of capacity %d; the filter %d of %d", items, capacity, s.Count(), s.Cap())
			}
		})
	}
}

// TestCountingStats: Stats counts the counters above zero and at 15, as
// reading each counter does, whatever the mix.
func TestCountingStats(t *testing.T) {
	for _, v := range countingVariants {
		t.Run(v.String(), func(t *testing.T) {
			c := newCountingT(t, 1000, 0.01, v.opts()...)
			if st := c.Stats(); st != (CountingStats{}) {
				t.Errorf("empty filter: %+v", st)
			}
			for i := range 500 {
				c.AddString(fmt.Sprintf("item-%d", i))
			}
			for range 20 { // saturates this item's counters
				c.AddString("often")
			}
			var want CountingStats
			for x := range c.Counters() {
				v := c.counter(x)
				want.InUse += uint64(min(v, 1))
				if v == counterMax {
					want.Saturated++
				}
			}
			if got := c.Stats(); got != want || want.Saturated < uint64(c.K()) || want.InUse < 500 {
				t.Errorf("Stats() = %+v, counted %+v", got, want)
			}
			// Every counter value once, in each position.
			clear(c.words)
			c.words[0], c.words[1] = 0xfedcba9876543210, 0x0123456789abcdef
			if got := c.Stats(); got != (CountingStats{InUse: 30, Saturated: 2}) {
				t.Errorf("counters 0…15 twice: Stats() = %+v, want 30 in use, 2 saturated", got)
			}
		})
	}
}
