package bloom

import (
	"errors"
	"fmt"
	"testing"
)

// TestScalablePlan: the plan's sub-filters are the sub-filters a Scalable
// with the same parameters opens as it grows, for several option sets and
// both layouts; invalid options fail as in NewScalable.
func TestScalablePlan(t *testing.T) {
	for _, layout := range []Layout{Blocked, Classic} {
		for _, so := range []Growth{
			{},
			{RedisBloom: true},
			{Expansion: 3, Tightening: 0.8, FirstShare: 0.2},
		} {
			s, err := NewScalable(10, 0.01, WithGrowth(so), WithLayout(layout))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2000 {
				if _, err := s.AddString(fmt.Sprintf("item-%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			pl, err := NewScalablePlan(10, 0.01, WithGrowth(so), WithLayout(layout))
			if err != nil {
				t.Fatal(err)
			}
			if pl.Expansion != s.Expansion() {
				t.Errorf("%s %+v: expansion %d, Scalable %d", layout, so, pl.Expansion, s.Expansion())
			}
			fs := s.filters()
			if len(fs) < 4 {
				t.Fatalf("%s %+v: only %d sub-filters", layout, so, len(fs))
			}
			for i, f := range fs {
				got, err := pl.Sub(i)
				if err != nil || got != f.Sizing() {
					t.Errorf("%s %+v: Sub(%d) = %v, %v; Scalable has %v", layout, so, i, got, err, f.Sizing())
				}
				n, p, err := pl.SubRate(i)
				if wn, wp := s.rule().sub(i); err != nil || n != wn || p != wp {
					t.Errorf("%s %+v: SubRate(%d) = %d, %g, %v; Scalable has %d, %g", layout, so, i, n, p, err, wn, wp)
				}
			}
		}
	}
	for _, so := range []Growth{{Tightening: 1}, {FirstShare: 1.5}, {RedisBloom: true, Tightening: 0.9}} {
		if _, err := NewScalablePlan(10, 0.01, WithGrowth(so), WithLayout(Blocked)); err == nil {
			t.Errorf("NewScalablePlan(%+v) accepted", so)
		}
	}
	if _, err := NewScalablePlan(0, 0.01, WithLayout(Blocked)); !errors.Is(err, ErrInvalidCapacity) {
		t.Errorf("n0 = 0: %v", err)
	}
	if _, err := NewScalablePlan(10, 0.01, WithLayout(Layout(9))); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("layout 9: %v", err)
	}
	pl, _ := NewScalablePlan(10, 0.01, WithNonScaling(), WithLayout(Blocked))
	if _, err := pl.Sub(1); !errors.Is(err, ErrFull) || pl.Expansion != 0 {
		t.Errorf("non-scaling Sub(1): %v (expansion %d)", err, pl.Expansion)
	}
	pl, _ = NewScalablePlan(10, 0.01, WithLayout(Blocked))
	if _, err := pl.Sub(MaxSubFilters); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Sub(MaxSubFilters): %v", err)
	}
	if _, err := (ScalablePlan{N0: 10, P: 0.01, Expansion: 2, Layout: Blocked}).Sub(0); err == nil {
		t.Error("a plan without tightening and first share accepted")
	}
}
