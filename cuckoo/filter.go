package cuckoo

import (
	"fmt"
	"math"
	"math/bits"
)

// Filter is a cuckoo filter of one or more sub-filters (the package doc
// says what it guarantees, its concurrency rules and its limits). Make
// one with New, LoadDumpHeader or Load; the zero Filter is not usable.
type Filter struct {
	subs          []subFilter // oldest first
	base          uint64      // buckets of sub-filter 0
	items         uint64      // fingerprints stored (RedisBloom's numItems)
	deletes       uint64      // deletes since the last compaction
	bucketSize    uint64      // 1..255
	slots         uint64      // slotBits(bucketSize)
	maxIterations uint64      // 1..65535
	expansion     uint64      // as stored: rounded up by New, verbatim from a dump
	bytes         uint64      // Σ len(subs[i].data)
	maxBytes      uint64
	growHook      func(extra uint64) error // SetGrowHook
	view          *View                    // the open View, if any (view.go)
}

// subFilter is one sub-filter: nb buckets of bucketSize one-byte slots,
// bucket b at data[b·bucketSize:]; 0 is an empty slot.
type subFilter struct {
	data []byte
	nb   uint64
	mask uint64 // nb − 1 when pow2
	pow2 bool   // nb is a power of two (else the bucket is h mod nb)
}

// New makes an empty filter for about capacity items, as CF.RESERVE does:
// one sub-filter of the next power of two ≥ capacity/bucketSize buckets
// (capacity 1000 gives 512 buckets of 2 slots; 1025 also gives 512).
// Options set the bucket size, iterations, expansion and size limit.
// Errors: ErrInvalid for a parameter out of range or a capacity below
// twice the bucket size; ErrTooLarge for a filter beyond the limits.
func New(capacity uint64, opts ...Option) (*Filter, error) {
	c := newConfig(opts)
	h, err := c.header(capacity)
	if err != nil {
		return nil, err
	}
	return h.filter(c.maxBytes)
}

// header checks New's arguments and returns the header of the empty
// filter they make.
func (c config) header(capacity uint64) (dumpHeader, error) {
	if err := c.check(capacity); err != nil {
		return dumpHeader{}, err
	}
	base := nextPow2(capacity / c.bucketSize)
	if base == 0 || base > MaxBuckets {
		return dumpHeader{}, fmt.Errorf("%w: capacity %d needs more than %d buckets", ErrTooLarge, capacity, uint64(MaxBuckets))
	}
	exp := uint64(0)
	if c.expansion > 0 {
		exp = nextPow2(c.expansion)
	}
	return dumpHeader{buckets: base, filters: 1, bucketSize: c.bucketSize, maxIterations: c.maxIterations, expansion: exp}, nil
}

// check checks New's parameters.
func (c config) check(capacity uint64) error {
	switch {
	case c.bucketSize < 1 || c.bucketSize > MaxBucketSize:
		return fmt.Errorf("%w: bucket size %d, want 1 to %d", ErrInvalid, c.bucketSize, MaxBucketSize)
	case c.maxIterations < 1 || c.maxIterations > MaxIterationsLimit:
		return fmt.Errorf("%w: max iterations %d, want 1 to %d", ErrInvalid, c.maxIterations, MaxIterationsLimit)
	case c.expansion > MaxExpansion:
		return fmt.Errorf("%w: expansion %d, want 0 to %d", ErrInvalid, c.expansion, MaxExpansion)
	case capacity < 2*c.bucketSize:
		return fmt.Errorf("%w: capacity %d is less than twice the bucket size %d", ErrInvalid, capacity, c.bucketSize)
	}
	return nil
}

// newFilter allocates a filter of n sub-filters, checking their sizes
// against the limits first.
func newFilter(base, bucketSize, maxIterations, expansion uint64, n int, maxBytes uint64) (*Filter, error) {
	total, err := subBytes(base, expansion, n, bucketSize)
	if err != nil {
		return nil, err
	}
	if total > maxBytes {
		return nil, fmt.Errorf("%w: %d sub-filters take %d bytes, more than %d", ErrTooLarge, n, total, maxBytes)
	}
	f := &Filter{base: base, bucketSize: bucketSize, slots: slotBits(bucketSize), maxIterations: maxIterations, expansion: expansion, maxBytes: maxBytes, bytes: total}
	f.subs = make([]subFilter, 0, n)
	for nb := base; len(f.subs) < n; nb *= expansion {
		f.subs = append(f.subs, newSub(nb, bucketSize))
	}
	return f, nil
}

// subBytes is the bytes of n sub-filters of base·expansion^i buckets of
// bucketSize slots, i = 0..n−1, or ErrTooLarge when one would have more
// than MaxBuckets buckets or they would take more than 2⁶³ bytes.
func subBytes(base, expansion uint64, n int, bucketSize uint64) (uint64, error) {
	total, nb := uint64(0), base
	for i := range n {
		if i > 0 {
			var err error
			if nb, err = nextBuckets(nb, expansion, i); err != nil {
				return 0, err
			}
		}
		if total += nb * bucketSize; total > math.MaxInt64 {
			return 0, fmt.Errorf("%w: the sub-filters take more than 2^63 bytes", ErrTooLarge)
		}
	}
	return total, nil
}

// nextBuckets is the bucket count of sub-filter i, after one of nb
// buckets: nb·expansion, or ErrTooLarge when it is 0 or more than
// MaxBuckets.
func nextBuckets(nb, expansion uint64, i int) (uint64, error) {
	hi, lo := bits.Mul64(nb, expansion)
	if hi != 0 || lo > MaxBuckets || lo == 0 {
		return 0, fmt.Errorf("%w: sub-filter %d would have %d×%d buckets (1 to 2^56-1 allowed)", ErrTooLarge, i, nb, expansion)
	}
	return lo, nil
}

// grow adds a sub-filter, as RedisBloom's CuckooFilter_Grow: ErrTooLarge
// when there are MaxFilters already, or the new one is beyond the
// limits.
func (f *Filter) grow() error {
	n := len(f.subs)
	if n >= MaxFilters {
		return fmt.Errorf("%w: the filter has %d sub-filters already", ErrTooLarge, n)
	}
	nb, err := nextBuckets(f.subs[n-1].nb, f.expansion, n)
	if err != nil {
		return err
	}
	size := nb * f.bucketSize
	if size > f.maxBytes-f.bytes {
		return fmt.Errorf("%w: a new sub-filter of %d bytes would take the filter past %d bytes", ErrTooLarge, size, f.maxBytes)
	}
	if f.growHook != nil {
		if err := f.growHook(size); err != nil {
			return fmt.Errorf("%w: a new sub-filter of %d bytes: %w", ErrTooLarge, size, err)
		}
	}
	f.subs = append(f.subs, newSub(nb, f.bucketSize))
	f.bytes += nb * f.bucketSize
	return nil
}

// SetGrowHook sets a function called before a growth allocates a new
// sub-filter of extra bytes, after the limits have passed: when it
// returns an error the growth fails as one beyond the limits
// (ErrTooLarge; the insert's GrowFailed) and nothing is allocated. A
// server charges its memory budget with it. It is called under the same
// exclusive access as the insert that grows; nil removes it.
func (f *Filter) SetGrowHook(h func(extra uint64) error) { f.growHook = h }

// nextPow2 is the least power of two ≥ n, 1 for 0, and 0 when it
// exceeds 2⁶³.
func nextPow2(n uint64) uint64 {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len64(n-1) // 1 << 64 is 0 in Go
}

// Info is what RedisBloom's CF.INFO reports of a filter.
type Info struct {
	Size          uint64 // bytes, as CF.INFO counts them: 40 + 16·Filters + the bucket bytes
	Buckets       uint64 // buckets of sub-filter 0
	Filters       uint64 // sub-filters
	Items         uint64 // fingerprints stored now
	Deleted       uint64 // deletes since the last compaction
	BucketSize    uint64
	Expansion     uint64 // as stored (New rounds it up to a power of two)
	MaxIterations uint64
}

// Info describes the filter as CF.INFO does.
func (f *Filter) Info() Info {
	return Info{
		Size:    40 + 16*uint64(len(f.subs)) + f.bytes,
		Buckets: f.base, Filters: uint64(len(f.subs)),
		Items: f.items, Deleted: f.deletes,
		BucketSize: f.bucketSize, Expansion: f.expansion, MaxIterations: f.maxIterations,
	}
}

// Bytes is the memory of the sub-filters' buckets: what WithMaxBytes
// limits.
func (f *Filter) Bytes() uint64 { return f.bytes }

// Items is the number of fingerprints stored: adds less deletes.
func (f *Filter) Items() uint64 { return f.items }

// Filters is the number of sub-filters.
func (f *Filter) Filters() int { return len(f.subs) }
