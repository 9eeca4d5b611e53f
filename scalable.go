package bloom

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// ErrFull reports an Add of a new item to a non-scaling Scalable filter
// that has reached its capacity.
var ErrFull = errors.New("bloom: non-scaling filter is full")

// Scalable is a Bloom filter that grows (Almeida et al., 2007): a chain of
// sub-filters, sub-filter i sized for capacity n0·s^i, with error rates
// that sum to at most p, so the compound false-positive rate stays at most
// p however many items arrive. A new sub-filter opens only when a new item
// arrives and the last one holds as many items as its capacity.
//
// The error budget: sub-filter 0 gets p·f (the first share, default 0.9),
// sub-filter i ≥ 1 gets p·(1−f)·(1−r)·r^(i−1) (tightening r, default 0.5);
// the one sub-filter of a non-scaling filter gets all of it, p.
// With f = 1−r this is the textbook split p·(1−r)·r^i; RedisBloom uses
// f = r = 0.5 (WithRedisBloomSplit). The default f = 0.9 keeps a
// filter that never grows within 5% of a Filter of the same n and p (the
// split f = 0.5 costs 16% more at p = 0.01, 30% at p = 0.1); once it has
// grown, its newer sub-filters get a 5× smaller rate than RedisBloom's,
// about 3.3 more bits per item in them. docs/BENCHMARKS.md has figures.
//
// With WithRedisBloomSplit the growth and counting rules are exactly
// RedisBloom's: first sub-filter at p/2 (at p when non-scaling), each
// next one with capacity × expansion and error × 0.5, the count growing
// only for new items; in the RedisBloom layout (WithLayout(RedisBloom),
// which implies the split) the sub-filters are RedisBloom's own, bit for
// bit, and may be more than MaxSubFilters, as many as RedisBloom's error
// halving allows (about 1,070). BF.INFO's
// Capacity, Number of filters, Number of items inserted and Expansion rate
// come out the same for the same commands. (Those counters do not depend on
// the error split, so they match in the default mode too.)
//
// Concurrency: Add may be called from many goroutines at once (adds and
// growth are serialised by a mutex). Test and the read-only methods may
// run from many goroutines at once; to run them while Adds run too, make
// the filter WithConcurrent (its sub-filters then read and write bits
// atomically, which costs about 2× per Add). Only the last sub-filter ever
// changes. UnmarshalBinary needs exclusive access.
//
// Memory: a new filter is two allocations, this struct (144 bytes, with
// its first sub-filter inside) and that sub-filter's bit array; the chain
// of further sub-filters is allocated when the first one is full.
type Scalable struct {
	mu sync.Mutex // serialises Add and growth
	// chain is an immutable snapshot of the sub-filters for readers, or
	// nil while the chain is one[:]: the first sub-filter alone.
	chain atomic.Pointer[[]*Filter]
	one   [1]*Filter // &first
	first Filter     // sub-filter 0, unless UnmarshalBinary replaced the chain

	prm  *growthParams            // shared by filters with the same ones
	grow func(extra uint64) error // SetGrowHook's fn, or nil; under mu
}

// growthParams are a Scalable filter's growth parameters and size
// limit. Filters made with the same ones share one copy (sharedParams):
// a server keeps a filter per key, most with the same parameters.
type growthParams struct {
	p        float64 // compound rate
	s        uint64  // expansion (growth factor); 0 means non-scaling
	r        float64 // tightening ratio
	f        float64 // first share of the error budget
	maxBytes uint64  // size limit of all sub-filters together
	rbGrowth uint32  // RedisBloom layout: its dump's growth field (s, unless non-scaling)
}

// sharedParams interns growthParams, up to maxSharedParams distinct
// sets (then each filter keeps its own: a client choosing a new rate for
// every filter cannot grow the table without bound).
var sharedParams struct {
	sync.Map // growthParams → *growthParams
	n        atomic.Int64
}

const maxSharedParams = 4096

// params returns the shared copy of v.
func params(v growthParams) *growthParams {
	if p, ok := sharedParams.Load(v); ok {
		return p.(*growthParams)
	}
	p := new(growthParams) // not &v: v would then escape on every call
	*p = v
	if sharedParams.n.Load() >= maxSharedParams {
		return p
	}
	if q, loaded := sharedParams.LoadOrStore(v, p); loaded {
		return q.(*growthParams)
	}
	sharedParams.n.Add(1)
	return p
}

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

// NewScalable returns an empty scalable filter with initial capacity n0 and
// compound false-positive rate p. Options: the growth rule (WithExpansion,
// WithNonScaling, WithTightening, WithFirstShare, WithRedisBloomSplit,
// WithGrowth) and the sub-filters' (WithLayout, WithKey, WithMaxBytes,
// WithConcurrent). The RedisBloom layout implies WithRedisBloomSplit, and
// its expansion is at most 2^32−1 (RedisBloom's is a 32-bit field).
func NewScalable(n0 uint64, p float64, opts ...Option) (*Scalable, error) {
	if err := checkNP(n0, p); err != nil {
		return nil, err
	}
	c := newConfig(opts)
	if err := c.checkLayout(c.layout); err != nil {
		return nil, err
	}
	prm, err := c.growthParams(p)
	if err != nil {
		return nil, err
	}
	s := &Scalable{prm: params(prm)}
	sz, err := s.subSize(growthRule{n0, p, prm.s, prm.r, prm.f}, c.layout, 0, 0)
	if err != nil {
		return nil, err
	}
	if err := initFilter(&s.first, sz, c); err != nil {
		return nil, err
	}
	s.one[0] = &s.first
	return s, nil
}

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
	prm := growthParams{p: p, s: exp, r: r, f: f, maxBytes: c.maxBytes}
	if c.layout == RedisBloom {
		rb := exp
		if g.NonScaling {
			rb = g.Expansion
		}
		if rb > math.MaxUint32 {
			return growthParams{}, fmt.Errorf("bloom: expansion %d above RedisBloom's maximum %d", rb, uint32(math.MaxUint32))
		}
		prm.rbGrowth = uint32(rb)
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
	return growthRule{s.filters()[0].n, s.prm.p, s.prm.s, s.prm.r, s.prm.f}
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

// subSize sizes sub-filter i of rule g with layout, checking that it
// may exist and that the chain, at bytes before it, stays within
// s.prm.maxBytes.
func (s *Scalable) subSize(g growthRule, layout Layout, i int, bytes uint64) (Sizing, error) {
	if limit := maxSubFilters(layout); i >= limit {
		return Sizing{}, fmt.Errorf("%w: more than %d sub-filters", ErrTooLarge, limit)
	}
	n, p := g.sub(i)
	if p < 1e-300 && (layout != RedisBloom || p == 0) { // RedisBloom sizes any rate above 0
		return Sizing{}, fmt.Errorf("%w: sub-filter %d would need error rate %g", ErrTooLarge, i, p)
	}
	sz, err := Size(n, p, layout)
	if err != nil {
		return Sizing{}, fmt.Errorf("bloom: sub-filter %d: %w", i, err)
	}
	if total := bytes + sz.Bytes(); total > s.prm.maxBytes || total < bytes {
		return Sizing{}, fmt.Errorf("%w: growing to %d bytes, limit %d", ErrTooLarge, total, s.prm.maxBytes)
	}
	return sz, nil
}

// newSub allocates sub-filter i (i ≥ 1), with the first one's layout,
// key and concurrency mode, after the grow hook accepts its size.
func (s *Scalable) newSub(i int) (*Filter, error) {
	first := s.filters()[0]
	sz, err := s.subSize(s.rule(), first.layout, i, s.Bytes())
	if err != nil {
		return nil, err
	}
	if fn := s.grow; fn != nil {
		if err := fn(sz.Bytes()); err != nil {
			return nil, err
		}
	}
	f, err := newFilter(sz, config{layout: first.layout, concurrent: first.concurrent, maxBytes: s.prm.maxBytes})
	if err != nil {
		return nil, err
	}
	if first.ext.keyed() {
		f.ext = first.ext // one key for all
	}
	return f, nil
}

// SetGrowHook makes every later growth first call fn with the bytes of
// the sub-filter about to be added (after the WithMaxBytes check, before
// allocating it), with the filter's add lock held; nil removes the hook.
// If fn returns an error, the Add fails with exactly that error and the
// filter is unchanged. fn may charge a budget shared by many filters; it
// must not call back into s. One fn may serve many filters: setting it
// allocates nothing. It is safe to call while Adds run (it waits for the
// add lock); Clone does not copy the hook.
func (s *Scalable) SetGrowHook(fn func(extra uint64) error) {
	s.mu.Lock()
	s.grow = fn
	s.mu.Unlock()
}

// filters is the chain of sub-filters, oldest first: a snapshot that Add
// never changes (growth stores a new one).
func (s *Scalable) filters() []*Filter {
	if c := s.chain.Load(); c != nil {
		return *c
	}
	if s.one[0] == nil { // a zero Scalable, before UnmarshalBinary
		return nil
	}
	return s.one[:]
}

// Test reports whether item may be in the set.
func (s *Scalable) Test(item []byte) bool { return s.TestHash(s.hash(item)) }

// TestString is Test for a string, without copying it.
func (s *Scalable) TestString(item string) bool { return s.Test(bytesOf(item)) }

// TestHash reports whether an item with hash h may be in the set.
func (s *Scalable) TestHash(h Hash) bool {
	fs := s.filters()
	for i := len(fs) - 1; i >= 0; i-- { // newest first: most items live there
		if fs[i].TestHash(h) {
			return true
		}
	}
	return false
}

// hash is the sub-filters' hash of item: they all share one key (or none).
func (s *Scalable) hash(item []byte) Hash { return s.filters()[0].Hash(item) }

// Add inserts item and reports whether it was new (absent from every
// sub-filter, and at least one bit changed). A new item that would exceed
// a non-scaling filter's capacity is refused with ErrFull; growth beyond
// WithMaxBytes fails with ErrTooLarge. Items already present always
// answer (false, nil).
func (s *Scalable) Add(item []byte) (bool, error) { return s.AddHash(s.hash(item)) }

// AddString is Add for a string, without copying it.
func (s *Scalable) AddString(item string) (bool, error) { return s.Add(bytesOf(item)) }

// AddHash is Add for an item's hash.
func (s *Scalable) AddHash(h Hash) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.filters()
	last := fs[len(fs)-1]
	for i := len(fs) - 2; i >= 0; i-- { // the full ones, newest first
		if fs[i].TestHash(h) {
			return false, nil
		}
	}
	if last.Inserted() >= last.Cap() {
		if last.TestHash(h) {
			return false, nil
		}
		if s.prm.s == 0 {
			return false, ErrFull
		}
		f, err := s.newSub(len(fs))
		if err != nil {
			return false, err
		}
		grown := append(fs[:len(fs):len(fs)], f)
		s.chain.Store(&grown)
		last = f
	}
	if vs := viewsOf(s); vs != nil {
		vs.beforeAdd(last, h)
	}
	// Filter.AddHash reports whether a bit changed, and counts the item.
	return last.AddHash(h), nil
}

// Count is the number of items inserted: Adds that reported new.
func (s *Scalable) Count() uint64 {
	var c uint64
	for _, f := range s.filters() {
		c += f.Inserted()
	}
	return c
}

// Cap is the total capacity of the sub-filters opened so far.
func (s *Scalable) Cap() uint64 {
	var c uint64
	for _, f := range s.filters() {
		c += f.Cap()
	}
	return c
}

// Bytes is the memory of all sub-filters' bit arrays.
func (s *Scalable) Bytes() uint64 {
	var b uint64
	for _, f := range s.filters() {
		b += f.Bytes()
	}
	return b
}

// NumFilters is the number of sub-filters.
func (s *Scalable) NumFilters() int { return len(s.filters()) }

// Expansion is the growth factor, 0 for a non-scaling filter.
func (s *Scalable) Expansion() uint64 { return s.prm.s }

// TargetFPR is the compound false-positive rate the filter keeps.
func (s *Scalable) TargetFPR() float64 { return s.prm.p }

// ScalableInfo summarises a Scalable filter, as BF.INFO reports it.
type ScalableInfo struct {
	Capacity   uint64 // total capacity of the sub-filters
	Bytes      uint64 // memory of the bit arrays
	Filters    int    // number of sub-filters
	Items      uint64 // items inserted
	Expansion  uint64 // growth factor; 0 when non-scaling
	NonScaling bool
	// RedisBloomSize is BF.INFO's Size as RedisBloom computes it (its
	// memory usage on 64-bit hosts): 32 bytes of chain, 64 per
	// sub-filter, and the bit arrays. In the RedisBloom layout it is
	// RedisBloom's figure for the same filter (4056 after BF.RESERVE k
	// 0.001 2000).
	RedisBloomSize uint64
}

// Info returns the filter's summary.
func (s *Scalable) Info() ScalableInfo {
	fs := s.filters()
	in := ScalableInfo{Filters: len(fs), Expansion: s.prm.s, NonScaling: s.prm.s == 0}
	for _, f := range fs {
		in.Capacity += f.Cap()
		in.Bytes += f.Bytes()
		in.Items += f.Inserted()
	}
	in.RedisBloomSize = rbChainMem + rbLinkMem*uint64(in.Filters) + in.Bytes
	return in
}

// EstimatedFPR is the compound false-positive rate the filter has now,
// from the bits of its sub-filters: 1 − Π(1 − rate_i). It reads every
// sub-filter's bit array.
func (s *Scalable) EstimatedFPR() float64 {
	pass := 1.0
	for _, f := range s.filters() {
		pass *= 1 - f.EstimatedFPR()
	}
	return 1 - pass
}
