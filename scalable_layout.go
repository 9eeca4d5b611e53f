package bloom

// The layout of each sub-filter of a Scalable filter (docs/DESIGN.md §5).
// A chain has one layout, the one it was made with (WithLayout) and
// every header records; in the blocked layout its small sub-filters are
// classic where that is smaller, unless the chain is uniform
// (Growth.UniformLayout, and files of format version 1). The rule is a
// function of the sub-filter's capacity and rate alone, so a reader
// checks each sub-filter's layout exactly (checkSub), and any store that
// grows a filter by a ScalablePlan gets the same sub-filters.

// smallBlockedBytes is the largest blocked bit array that a Scalable
// filter's rule replaces by a classic one: 8 blocks. Up to there the
// classic array of the same capacity and rate is up to 88% smaller (the
// blocked layout rounds up to whole 64-byte blocks and needs more bits
// per item; 152 bytes instead of 192 for 100 items at 0.005), and a
// lookup in it costs 5–11 ns more in the cache: the whole array is at
// most 8 cache lines (docs/BENCHMARKS.md, "Small sub-filters").
// Changing it changes which sub-filters a version-3 file may hold: it
// needs a new format version.
const smallBlockedBytes = 8 * BlockBits / 8

// subSizing sizes a sub-filter of capacity n at rate p in a chain of
// layout chain: Size(n, p, chain), except that a blocked chain that is
// not uniform takes Size(n, p, Classic) when the blocked array would be
// at most smallBlockedBytes and the classic one is smaller. It sizes
// the classic array only for those small ones.
func subSizing(n uint64, p float64, chain Layout, uniform bool) (Sizing, error) {
	sz, err := Size(n, p, chain)
	if err != nil || chain != Blocked || uniform || sz.Bytes() > smallBlockedBytes {
		return sz, err
	}
	if c, err := Size(n, p, Classic); err == nil && c.Bytes() < sz.Bytes() {
		return c, nil
	}
	return sz, nil
}

// subLayout is the layout subSizing gives a sub-filter of capacity n at
// rate p in a chain of layout chain (Blocked where it cannot be sized:
// no such sub-filter is small).
func subLayout(n uint64, p float64, chain Layout, uniform bool) Layout {
	if chain != Blocked || uniform {
		return chain
	}
	sz, err := subSizing(n, p, chain, uniform)
	if err != nil {
		return chain
	}
	return sz.Layout
}
