package bloom

import "fmt"

// ScalablePlan is the growth plan of a Scalable filter without its bit
// arrays: the capacity, error rate and geometry of each sub-filter. A store
// that keeps a scalable filter elsewhere (package redisfilter keeps it in
// Redis) grows by it, so its sub-filters are exactly those of the in-memory
// Scalable with the same parameters, with the same bits for the same items;
// a store that keeps it in memory (the server) charges each sub-filter's
// size before NewScalable or a growth allocates it.
type ScalablePlan struct {
	N0         uint64  // capacity of the first sub-filter
	P          float64 // compound false-positive rate
	Expansion  uint64  // capacity growth factor; 0 when non-scaling
	Tightening float64 // error ratio r between sub-filters after the first
	FirstShare float64 // share f of the error budget of the first sub-filter
	Layout     Layout
	// UniformLayout keeps every sub-filter in Layout (Growth's
	// UniformLayout); otherwise a Blocked plan's small sub-filters are
	// classic where that is smaller, as NewScalable makes them. Package
	// redisfilter records which in its metadata's version.
	UniformLayout bool
}

// NewScalablePlan returns the plan of NewScalable(n0, p, opts...): the
// growth rule and layout options, defaults filled in and checked by the
// same rules (the other options do not change the plan). UniformLayout is
// set only for the blocked layout (the others are uniform anyway).
func NewScalablePlan(n0 uint64, p float64, opts ...Option) (ScalablePlan, error) {
	c := newConfig(opts)
	so, layout := c.growth, c.layout
	if err := checkNP(n0, p); err != nil {
		return ScalablePlan{}, err
	}
	if layout != Blocked && layout != Classic {
		return ScalablePlan{}, fmt.Errorf("%w: %d", ErrInvalidLayout, layout)
	}
	exp, r, f, err := so.resolve()
	if err != nil {
		return ScalablePlan{}, err
	}
	return ScalablePlan{N0: n0, P: p, Expansion: exp, Tightening: r, FirstShare: f, Layout: layout,
		UniformLayout: so.UniformLayout && layout == Blocked}, nil
}

// Sub returns the geometry of sub-filter i (0 is the first): Size of its
// capacity and rate (SubRate) in Layout, or in the classic layout for a
// small sub-filter of a Blocked plan that is not uniform, exactly as
// NewScalable's sub-filter i. Sizing costs microseconds (memoised);
// SubRate is cheaper.
func (pl ScalablePlan) Sub(i int) (Sizing, error) {
	n, p, err := pl.SubRate(i)
	if err != nil {
		return Sizing{}, err
	}
	sz, err := subSizing(n, p, pl.Layout, pl.UniformLayout)
	if err != nil {
		return Sizing{}, fmt.Errorf("bloom: sub-filter %d: %w", i, err)
	}
	return sz, nil
}

// SubRate returns the capacity N0·Expansion^i and the share of the error
// budget of sub-filter i. It fails with ErrTooLarge beyond MaxSubFilters
// or where the rate underflows, and for i > 0 of a non-scaling plan.
func (pl ScalablePlan) SubRate(i int) (uint64, float64, error) {
	if err := checkNP(pl.N0, pl.P); err != nil {
		return 0, 0, err
	}
	if !(pl.Tightening > 0 && pl.Tightening < 1) || !(pl.FirstShare > 0 && pl.FirstShare < 1) {
		return 0, 0, fmt.Errorf("bloom: scalable plan with tightening %v and first share %v, want both in (0, 1)",
			pl.Tightening, pl.FirstShare)
	}
	switch {
	case i < 0:
		return 0, 0, fmt.Errorf("bloom: sub-filter %d", i)
	case i >= MaxSubFilters:
		return 0, 0, fmt.Errorf("%w: more than %d sub-filters", ErrTooLarge, MaxSubFilters)
	case i > 0 && pl.Expansion == 0:
		return 0, 0, fmt.Errorf("%w: a non-scaling filter has one sub-filter", ErrFull)
	}
	n, p := growthRule{pl.N0, pl.P, pl.Expansion, pl.Tightening, pl.FirstShare}.sub(i)
	if p < 1e-300 {
		return 0, 0, fmt.Errorf("%w: sub-filter %d would need error rate %g", ErrTooLarge, i, p)
	}
	return n, p, nil
}
