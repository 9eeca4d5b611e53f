package bloom

import (
	"fmt"
	"math"
)

// The growth rule of a Scalable filter: its options (Growth), limits,
// and the capacity and rate of each sub-filter (docs/DESIGN.md §5).

// Growth is the growth rule of a Scalable filter: what the options
// WithExpansion, WithNonScaling, WithTightening, WithFirstShare and
// WithRedisBloomSplit set one at a time, WithGrowth all at once, and
// Scalable.Growth reports. Zero fields take their defaults.
type Growth struct {
	_ struct{} // forces named fields

	// Expansion is the capacity growth factor s of each next sub-filter.
	// default: 2. A non-scaling filter ignores it, except in the
	// RedisBloom layout, which records it as given (0 included) where
	// RedisBloom records its EXPANSION: the growth field of the dump
	// header (BF.RESERVE's default there is 2).
	Expansion uint64
	// NonScaling makes the filter refuse new items beyond its capacity
	// with ErrFull instead of growing. default: false.
	NonScaling bool
	// Tightening is the error ratio r between consecutive sub-filters
	// after the first, in (0, 1). default: 0.5.
	Tightening float64
	// FirstShare is the share f of the error budget given to the first
	// sub-filter, in (0, 1). default: 0.9.
	FirstShare float64
	// RedisBloom selects RedisBloom's split: FirstShare and Tightening
	// 0.5 (setting either to another value is an error).
	RedisBloom bool
	// UniformLayout keeps every sub-filter of a Blocked filter in the
	// blocked layout. By default a sub-filter whose blocked bit array
	// would be at most 512 bytes (8 blocks) is classic where that is
	// smaller (docs/DESIGN.md §5): 152 bytes instead of 192 for 100
	// items at 0.005. A uniform filter is written as format version 1,
	// which readers from before the rule read. Other layouts are uniform
	// anyway (Scalable.Growth reports false for them). default: false.
	UniformLayout bool
}

// Default error split of a Scalable filter.
const (
	DefaultTightening = 0.5
	DefaultFirstShare = 0.9
)

// MaxSubFilters bounds the number of sub-filters of a Scalable filter,
// except in the RedisBloom layout, which has RedisBloom's bound: the
// error rate, halved with each sub-filter, must stay above 0 (so at most
// maxRedisBloomLinks).
const MaxSubFilters = 64

// maxRedisBloomLinks bounds the sub-filters of a RedisBloom-layout
// filter: the first one's error is below 1, each next one's half the
// last, and an error that reaches 0 (below 2^-1075) cannot be made.
const maxRedisBloomLinks = 1075

// maxSubFilters is the bound on the sub-filters of a filter in layout l.
func maxSubFilters(l Layout) int {
	if l == RedisBloom {
		return maxRedisBloomLinks
	}
	return MaxSubFilters
}

// MaxExpansion bounds the growth factor of a Scalable filter: each
// sub-filter at most 2^32 times the capacity of the one before
// (RedisBloom allows 32768). The decoders refuse a larger one.
const MaxExpansion = 1 << 32

// growthParams are the growth parameters of a filter at compound rate p
// made with c: its growth rule resolved (the RedisBloom layout implying
// RedisBloom's split), its size limit, and the growth field of its
// RedisBloom dump header.
func (c config) growthParams(p float64) (growthParams, error) {
	g := c.growth
	if c.layout == RedisBloom {
		g.RedisBloom = true
	}
	exp, r, f, err := g.resolve()
	if err != nil {
		return growthParams{}, err
	}
	prm := growthParams{p: p, s: exp, r: r, f: f, maxBytes: c.maxBytes,
		layout: c.layout, uniform: g.UniformLayout && c.layout == Blocked}
	if c.layout == RedisBloom {
		rb := exp
		if g.NonScaling {
			rb = g.Expansion
		}
		if rb > math.MaxUint32 {
			return growthParams{}, fmt.Errorf("bloom: expansion %d above RedisBloom's maximum %d", rb, uint32(math.MaxUint32))
		}
		prm.rb, prm.rbGrowth, prm.rbOptions = true, uint32(rb), redisBloomOptions(g.NonScaling)
	}
	return prm, nil
}

// resolve fills in so's defaults and checks them: the expansion (0 when
// non-scaling), tightening and first share.
func (so Growth) resolve() (exp uint64, r, f float64, err error) {
	exp, r, f = so.Expansion, so.Tightening, so.FirstShare
	if exp == 0 {
		exp = 2
	}
	if so.NonScaling {
		exp = 0
	}
	if exp > MaxExpansion {
		return 0, 0, 0, fmt.Errorf("bloom: expansion %d above the maximum %d", exp, uint64(MaxExpansion))
	}
	if so.RedisBloom {
		if (r != 0 && r != 0.5) || (f != 0 && f != 0.5) {
			return 0, 0, 0, fmt.Errorf("bloom: RedisBloom mode fixes tightening and first share at 0.5 (got %v, %v)", r, f)
		}
		r, f = 0.5, 0.5
	}
	if r == 0 {
		r = DefaultTightening
	}
	if f == 0 {
		f = DefaultFirstShare
	}
	if !(r > 0 && r < 1) {
		return 0, 0, 0, fmt.Errorf("bloom: tightening ratio %v not in (0, 1)", r)
	}
	if !(f > 0 && f < 1) {
		return 0, 0, 0, fmt.Errorf("bloom: first share %v not in (0, 1)", f)
	}
	return exp, r, f, nil
}

// growthRule is the rule of a Scalable filter's sub-filters: capacity
// n0·s^i and a share of the compound rate p (see Scalable).
type growthRule struct {
	n0   uint64
	p    float64
	s    uint64
	r, f float64
}

// rule is s's growth rule; the first sub-filter's capacity is n0.
func (s *Scalable) rule() growthRule {
	return growthRule{s.first.n, s.prm.p, s.prm.s, s.prm.r, s.prm.f}
}

// sub returns capacity and rate of sub-filter i. The one sub-filter of a
// non-scaling filter gets the whole rate p. RedisBloom's split
// (f = r = 0.5) halves the rate from one sub-filter to the next, as
// RedisBloom computes it: p/2, then each the last × 0.5.
func (g growthRule) sub(i int) (uint64, float64) {
	capacity := g.subCap(i)
	switch {
	case g.s == 0:
		return capacity, g.p
	case g.f == 0.5 && g.r == 0.5:
		q := g.p * 0.5
		for range i {
			q *= 0.5
		}
		return capacity, q
	case i == 0:
		return capacity, g.p * g.f
	}
	return capacity, g.p * (1 - g.f) * (1 - g.r) * math.Pow(g.r, float64(i-1))
}

// subCap is the capacity n0·s^i of sub-filter i, math.MaxUint64 if that
// does not fit.
func (g growthRule) subCap(i int) uint64 {
	capacity := g.n0
	for range i {
		if capacity > math.MaxUint64/max(g.s, 1) {
			return math.MaxUint64
		}
		capacity *= max(g.s, 1)
	}
	return capacity
}

// capacity is the total capacity of sub-filters 0 … m−1, and whether it
// is at most math.MaxInt64 (so that no count or capacity of a valid
// chain reads as negative where it is printed as a signed integer).
func (g growthRule) capacity(m int) (uint64, bool) {
	var total uint64
	for i := range m {
		n := g.subCap(i)
		if total += n; total > math.MaxInt64 || total < n {
			return total, false
		}
	}
	return total, true
}

// subSize sizes sub-filter i of rule g in the chain's layout (subSizing),
// checking that it may exist and that the chain, at bytes before it,
// stays within s.prm.maxBytes.
func (s *Scalable) subSize(g growthRule, i int, bytes uint64) (Sizing, error) {
	layout := s.prm.layout
	n, p := g.sub(i)
	if p < 1e-300 && (layout != RedisBloom || p == 0) { // RedisBloom sizes any rate above 0
		return Sizing{}, fmt.Errorf("%w: sub-filter %d would need error rate %g", ErrTooLarge, i, p)
	}
	sz, err := subSizing(n, p, layout, s.prm.uniform)
	if err != nil {
		return Sizing{}, fmt.Errorf("bloom: sub-filter %d: %w", i, err)
	}
	return sz, s.fits(layout, i, bytes, sz)
}

// fits checks that sub-filter i, of geometry sz, may exist: at most the
// layout's sub-filters, and the chain, at bytes before it, within
// s.prm.maxBytes.
func (s *Scalable) fits(layout Layout, i int, bytes uint64, sz Sizing) error {
	if limit := maxSubFilters(layout); i >= limit {
		return fmt.Errorf("%w: more than %d sub-filters", ErrTooLarge, limit)
	}
	if total := bytes + sz.Bytes(); total > s.prm.maxBytes || total < bytes {
		return fmt.Errorf("%w: growing to %d bytes, limit %d", ErrTooLarge, total, s.prm.maxBytes)
	}
	return nil
}
