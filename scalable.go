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
// sub-filters, sub-filter i sized for capacity n0·s^i at error rate
// p·(1−r)·r^i, so the compound false-positive rate stays at most p however
// many items arrive. A new sub-filter opens only when a new item arrives
// and the last one holds as many items as its capacity, so a Scalable
// filter at exactly its initial capacity costs the same memory as a Filter.
//
// With r = 0.5 (the default) the rules are exactly RedisBloom's: first
// sub-filter at p/2, each next one with capacity × expansion and error ×
// 0.5, the count growing only for new items; BF.INFO's Capacity, Number of
// filters, Number of items inserted and Expansion rate come out the same
// for the same commands.
//
// Concurrency: Test and the read-only methods may run from many goroutines
// at once, also while Add runs; Add may be called from many goroutines
// (adds are serialised by a mutex, tests take no lock).
type Scalable struct {
	mu     sync.Mutex                // serialises Add and growth
	chain  atomic.Pointer[[]*Filter] // immutable snapshot for readers
	count  atomic.Uint64             // items inserted (new items only)
	n0     uint64
	p      float64
	s      uint64   // expansion (growth factor); 0 means non-scaling
	r      float64  // tightening ratio
	cfg    config   // layout, key, size limit for every sub-filter
	counts []uint64 // items in each sub-filter (under mu)
}

// ScalableOptions configures NewScalable. Zero fields take their defaults.
type ScalableOptions struct {
	_ struct{} // forces named fields

	// Expansion is the capacity growth factor s of each next sub-filter.
	// default: 2.
	Expansion uint64
	// NonScaling makes the filter refuse new items beyond its capacity
	// with ErrFull instead of growing. default: false.
	NonScaling bool
	// Tightening is the error ratio r between consecutive sub-filters, in
	// (0, 1). default: 0.5 (RedisBloom's rule).
	Tightening float64
}

// NewScalable returns an empty scalable filter with initial capacity n0 and
// compound false-positive rate p. opts configures the sub-filters
// (WithLayout, WithKey, WithMaxBytes; WithConcurrent is implied).
func NewScalable(n0 uint64, p float64, so ScalableOptions, opts ...Option) (*Scalable, error) {
	if err := checkNP(n0, p); err != nil {
		return nil, err
	}
	s := &Scalable{n0: n0, p: p, s: so.Expansion, r: so.Tightening, cfg: newConfig(opts)}
	if s.s == 0 {
		s.s = 2
	}
	if so.NonScaling {
		s.s = 0
	}
	if s.r == 0 {
		s.r = 0.5
	}
	if !(s.r > 0 && s.r < 1) {
		return nil, fmt.Errorf("bloom: tightening ratio %v not in (0, 1)", so.Tightening)
	}
	s.cfg.concurrent = true
	first, err := s.newSub(0)
	if err != nil {
		return nil, err
	}
	s.chain.Store(&[]*Filter{first})
	s.counts = []uint64{0}
	return s, nil
}

// subSizing returns capacity and rate of sub-filter i.
func (s *Scalable) subSizing(i int) (uint64, float64) {
	capacity := s.n0
	for range i {
		if capacity > math.MaxUint64/max(s.s, 1) {
			capacity = math.MaxUint64
			break
		}
		capacity *= max(s.s, 1)
	}
	return capacity, s.p * (1 - s.r) * math.Pow(s.r, float64(i))
}

func (s *Scalable) newSub(i int) (*Filter, error) {
	n, p := s.subSizing(i)
	if p < math.SmallestNonzeroFloat64*1e10 {
		return nil, fmt.Errorf("%w: sub-filter %d would need error rate %g", ErrTooLarge, i, p)
	}
	sz, err := Size(n, p, s.cfg.layout)
	if err != nil {
		return nil, fmt.Errorf("bloom: sub-filter %d: %w", i, err)
	}
	if total := s.Bytes() + sz.Bytes(); total > s.cfg.maxBytes {
		return nil, fmt.Errorf("%w: growing to %d bytes, limit %d", ErrTooLarge, total, s.cfg.maxBytes)
	}
	return newFilter(sz, s.cfg)
}

func (s *Scalable) filters() []*Filter {
	if c := s.chain.Load(); c != nil {
		return *c
	}
	return nil
}

// Test reports whether item may be in the set.
func (s *Scalable) Test(item []byte) bool { return s.TestHash(s.hash(item)) }

// TestString is Test for a string, without copying it.
func (s *Scalable) TestString(item string) bool { return s.Test(bytesOf(item)) }

// TestHash reports whether an item with hash h may be in the set.
func (s *Scalable) TestHash(h Hash) bool {
	fs := s.filters()
	for i := len(fs) - 1; i >= 0; i-- { // newest first: most items live there
		if fs[i].testAtomic(h) {
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
	if s.TestHash(h) {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.TestHash(h) { // added by a racing Add meanwhile
		return false, nil
	}
	fs := s.filters()
	last := len(fs) - 1
	if s.counts[last] >= fs[last].Cap() {
		if s.s == 0 {
			return false, ErrFull
		}
		f, err := s.newSub(len(fs))
		if err != nil {
			return false, err
		}
		grown := append(fs[:len(fs):len(fs)], f)
		s.chain.Store(&grown)
		s.counts = append(s.counts, 0)
		fs, last = grown, last+1
	}
	if !fs[last].addAtomic(h) {
		return false, nil
	}
	s.counts[last]++
	s.count.Add(1)
	return true, nil
}

// Count is the number of items inserted: Adds that reported new.
func (s *Scalable) Count() uint64 { return s.count.Load() }

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
func (s *Scalable) Expansion() uint64 { return s.s }

// TargetFPR is the compound false-positive rate the filter keeps.
func (s *Scalable) TargetFPR() float64 { return s.p }

// ScalableInfo summarises a Scalable filter, as BF.INFO reports it.
type ScalableInfo struct {
	Capacity   uint64 // total capacity of the sub-filters
	Bytes      uint64 // memory of the bit arrays
	Filters    int    // number of sub-filters
	Items      uint64 // items inserted
	Expansion  uint64 // growth factor; 0 when non-scaling
	NonScaling bool
}

// Info returns the filter's summary.
func (s *Scalable) Info() ScalableInfo {
	return ScalableInfo{Capacity: s.Cap(), Bytes: s.Bytes(), Filters: s.NumFilters(),
		Items: s.Count(), Expansion: s.s, NonScaling: s.s == 0}
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
