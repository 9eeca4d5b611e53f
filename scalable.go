package bloom

import (
	"errors"
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
// Memory: a new filter is two allocations, this struct (96 bytes, with
// its first sub-filter inside) and that sub-filter's bit array; the chain
// of further sub-filters is allocated when the first one is full.
type Scalable struct {
	mu sync.Mutex // serialises Add and growth
	// chain is an immutable snapshot of the sub-filters for readers
	// (&first, then the others), or nil while first is alone.
	chain atomic.Pointer[[]*Filter]
	first Filter // sub-filter 0

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
	layout   Layout  // the chain's layout (its small sub-filters may be classic: subSizing)
	uniform  bool    // Blocked: every sub-filter blocked (Growth.UniformLayout, format version 1)
	// The RedisBloom layout's (rb): its dump header's growth and options
	// fields. Its NO_SCALING option, not s, says whether it scales: a
	// scaling chain from a hand-made header may have growth (and s) 0.
	rb        bool
	rbGrowth  uint32
	rbOptions uint32
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

// NewScalable returns an empty scalable filter with initial capacity n0 and
// compound false-positive rate p. Options: the growth rule (WithExpansion,
// WithNonScaling, WithTightening, WithFirstShare, WithRedisBloomSplit,
// WithGrowth) and the sub-filters' (WithLayout, WithKey, WithMaxBytes,
// WithConcurrent). The RedisBloom layout implies WithRedisBloomSplit, and
// its expansion is at most 2^32−1 (RedisBloom's is a 32-bit field).
func NewScalable(n0 uint64, p float64, opts ...Option) (*Scalable, error) {
	var m ScalableMaker
	if err := m.init(n0, p, newConfig(opts)); err != nil {
		return nil, err
	}
	return m.New(), nil
}

// newSub allocates sub-filter i (i ≥ 1), in the layout the chain's rule
// gives it (subSizing), with the first one's key and concurrency mode,
// after the grow hook accepts its size.
func (s *Scalable) newSub(i int) (*Filter, error) {
	first := &s.first
	var sz Sizing
	var n2 uint8
	var err error
	if s.prm.rb { // RedisBloom grows from the last sub-filter, by its options
		if sz, n2, err = s.rbNext(s.filters()[i-1]); err == nil {
			err = s.fits(RedisBloom, i, s.Bytes(), sz)
		}
	} else {
		sz, err = s.subSize(s.rule(), i, s.Bytes())
	}
	if err != nil {
		return nil, err
	}
	if fn := s.grow; fn != nil {
		if err := fn(sz.Bytes()); err != nil {
			return nil, err
		}
	}
	f, err := newFilter(sz, config{layout: sz.Layout, concurrent: first.concurrent, maxBytes: s.prm.maxBytes})
	if err != nil {
		return nil, err
	}
	switch {
	case first.ext.keyed():
		f.ext = first.ext // one key for all
	case s.prm.rb:
		f.ext = rbExt(first.ext.id, sz.P, sz.BPE, n2)
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
// never changes (growth stores a new one). While the first sub-filter is
// alone the slice is made here (on the caller's stack where it does not
// escape); the hot paths read s.first then, and make nothing.
func (s *Scalable) filters() []*Filter {
	if c := s.chain.Load(); c != nil {
		return *c
	}
	if s.first.nw == 0 { // a zero Scalable, before UnmarshalBinary
		return nil
	}
	return []*Filter{&s.first}
}

// Test reports whether item may be in the set.
func (s *Scalable) Test(item []byte) bool { return s.TestHash(s.hash(item)) }

// TestString is Test for a string, without copying it.
func (s *Scalable) TestString(item string) bool { return s.Test(bytesOf(item)) }

// TestHash reports whether an item with hash h may be in the set.
func (s *Scalable) TestHash(h Hash) bool {
	c := s.chain.Load()
	if c == nil {
		return s.first.nw != 0 && s.first.TestHash(h)
	}
	fs := *c
	for i := len(fs) - 1; i >= 0; i-- { // newest first: most items live there
		if fs[i].TestHash(h) {
			return true
		}
	}
	return false
}

// TestMany tests every item and returns the results in dst, resized to
// len(items) (a nil dst is allocated): the results of Test, item by item,
// on the sub-filters there are when it starts (items that concurrent Adds
// insert meanwhile may or may not be found). The newest sub-filter tests
// every item with Filter.TestMany (batches whose blocks are requested
// ahead: faster per item on filters larger than the CPU caches); the older
// ones, only the items it does not hold.
func (s *Scalable) TestMany(items [][]byte, dst []bool) []bool {
	if s.first.nw == 0 { // a zero Scalable, before UnmarshalBinary
		dst = resize(dst, len(items))
		clear(dst)
		return dst
	}
	c := s.chain.Load()
	if c == nil {
		return s.first.TestMany(items, dst)
	}
	fs := *c
	dst = fs[len(fs)-1].TestMany(items, dst) // the sub-filters share one hash (s.hash)
	for i, it := range items {
		if dst[i] {
			continue
		}
		h := s.hash(it)
		for j := len(fs) - 2; j >= 0 && !dst[i]; j-- {
			dst[i] = fs[j].TestHash(h)
		}
	}
	return dst
}

// hash is the sub-filters' hash of item: they all share one key (or none).
func (s *Scalable) hash(item []byte) Hash { return s.first.Hash(item) }

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
	return s.addLocked(h)
}

// AddMany adds items in order, as Add would one after the other, and
// sets isNew[i] (isNew has at least len(items) elements) to whether item
// i was new. It stops at the first item Add would refuse (ErrFull,
// ErrCannotGrow, ErrTooLarge), which it does not add, and returns its
// index and that error; else len(items) and nil. It hashes the items in
// batches and requests each batch's blocks in the newest sub-filter
// before adding them, so that their cache misses overlap: faster per item
// than Add on filters larger than the CPU caches. Concurrent calls are
// serialised, as Adds are.
func (s *Scalable) AddMany(items [][]byte, isNew []bool) (int, error) {
	isNew = isNew[:len(items)] // one bounds check, and a clear panic on misuse
	s.mu.Lock()
	defer s.mu.Unlock()
	var hs [batchSize]Hash
	for off := 0; off < len(items); off += batchSize {
		batch := items[off:min(off+batchSize, len(items))]
		for i, it := range batch {
			hs[i] = s.hash(it)
		}
		if fs := s.filters(); fs[len(fs)-1].mode != modeOther {
			fs[len(fs)-1].touchAhead(hs[:len(batch)])
		}
		for i := range batch {
			added, err := s.addLocked(hs[i])
			if err != nil {
				return off + i, err
			}
			isNew[off+i] = added
		}
	}
	return len(items), nil
}

// addLocked is AddHash with s.mu held.
func (s *Scalable) addLocked(h Hash) (bool, error) {
	last, subs := &s.first, 1
	if c := s.chain.Load(); c != nil {
		fs := *c
		last, subs = fs[len(fs)-1], len(fs)
		for i := len(fs) - 2; i >= 0; i-- { // the full ones, newest first
			if fs[i].TestHash(h) {
				return false, nil
			}
		}
	}
	if last.Inserted() >= last.Cap() {
		if last.TestHash(h) {
			return false, nil
		}
		if s.nonScaling() {
			return false, ErrFull
		}
		f, err := s.newSub(subs)
		if err != nil {
			return false, err
		}
		fs := s.filters()
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
}

// RedisBloomSize is BF.INFO's Size as RedisBloom computes it (its memory
// usage on 64-bit hosts): 32 bytes of chain, 64 per sub-filter, and the
// bit arrays. For a filter in the RedisBloom layout it is RedisBloom's
// figure for the same filter (4056 after BF.RESERVE k 0.001 2000).
func (in ScalableInfo) RedisBloomSize() uint64 {
	return rbChainMem + rbLinkMem*uint64(in.Filters) + in.Bytes
}

// Info returns the filter's summary.
func (s *Scalable) Info() ScalableInfo {
	fs := s.filters()
	in := ScalableInfo{Filters: len(fs), Expansion: s.prm.s, NonScaling: s.nonScaling()}
	for _, f := range fs {
		in.Capacity += f.Cap()
		in.Bytes += f.Bytes()
		in.Items += f.Inserted()
	}
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
