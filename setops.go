package bloom

import (
	"fmt"
	"sync/atomic"
)

// Compatible returns nil if f and g have the same layout, size, k and hash
// function (and key), so that their bits can be combined; otherwise an
// error wrapping ErrIncompatible that names the first difference.
func (f *Filter) Compatible(g *Filter) error {
	switch {
	case f.layout != g.layout:
		return fmt.Errorf("%w: layouts differ: %s and %s", ErrIncompatible, f.layout, g.layout)
	case f.m() != g.m():
		return fmt.Errorf("%w: sizes differ: %d and %d bits", ErrIncompatible, f.m(), g.m())
	case f.k != g.k:
		return fmt.Errorf("%w: hash counts differ: k = %d and %d", ErrIncompatible, f.k, g.k)
	case f.HashID() != g.HashID():
		return fmt.Errorf("%w: hash functions differ: %s and %s", ErrIncompatible, f.HashID(), g.HashID())
	case f.ext.keyed() && (f.ext.k0 != g.ext.k0 || f.ext.k1 != g.ext.k1):
		return fmt.Errorf("%w: filters are keyed with different keys", ErrIncompatible)
	}
	return nil
}

// Union adds every item of other to f (bitwise OR). The filters must be
// Compatible. Afterwards Inserted reports the estimate Count (at most
// Bits).
func (f *Filter) Union(other *Filter) error {
	return f.combine(other, func(a, b uint64) uint64 { return a | b })
}

// Intersect keeps in f only the bits also set in other (bitwise AND): it
// answers true for every item added to both, and its false-positive rate
// is at most f's. The filters must be Compatible. Afterwards Inserted
// reports the estimate Count (at most Bits).
func (f *Filter) Intersect(other *Filter) error {
	return f.combine(other, func(a, b uint64) uint64 { return a & b })
}

func (f *Filter) combine(other *Filter, op func(a, b uint64) uint64) error {
	if err := f.Compatible(other); err != nil {
		return err
	}
	for i := range f.words() {
		f.words()[i] = op(f.words()[i], other.word(uint64(i)))
	}
	f.setInserted(min(f.Count(), f.m())) // at most one new item per bit, as the decoders check
	return nil
}

// Clear removes every item.
func (f *Filter) Clear() {
	if f.concurrent {
		for i := range f.words() {
			atomic.StoreUint64(&f.words()[i], 0)
		}
	} else {
		clear(f.words())
	}
	f.setInserted(0)
}
