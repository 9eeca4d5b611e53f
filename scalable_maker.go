package bloom

import (
	"fmt"
	"unsafe"
)

// ScalableMaker makes empty Scalable filters of one set of parameters,
// with the work of NewScalable that does not depend on the filter
// (checking the options, the growth rule, sizing the first sub-filter)
// done once: making one is then an allocation and a copy. A store that
// creates many filters alike (a server's BF.ADD on new keys) keeps a
// maker per set of parameters.
//
// Init makes a filter over a bit array the caller provides, so that the
// caller can allocate the filter, its bit array and data of its own as
// one object.
//
// Concurrency: a ScalableMaker is immutable; any number of goroutines
// may use one at once.
type ScalableMaker struct {
	first Filter // sub-filter 0 as NewScalable makes it, without its bit array
	prm   *growthParams
	size  Sizing // of sub-filter 0
}

// NewScalableMaker returns a maker of the filters NewScalable(n0, p,
// opts...) returns, with the same checks and errors.
func NewScalableMaker(n0 uint64, p float64, opts ...Option) (*ScalableMaker, error) {
	m := new(ScalableMaker)
	if err := m.init(n0, p, newConfig(opts)); err != nil {
		return nil, err
	}
	return m, nil
}

// init makes m the maker of NewScalable(n0, p) with c.
func (m *ScalableMaker) init(n0 uint64, p float64, c config) error {
	if err := checkNP(n0, p); err != nil {
		return err
	}
	if err := c.checkLayout(c.layout); err != nil {
		return err
	}
	v, err := c.growthParams(p)
	if err != nil {
		return err
	}
	prm := params(v)
	s := Scalable{prm: prm}
	sz, err := s.subSize(growthRule{n0, p, v.s, v.r, v.f}, 0, 0)
	if err != nil {
		return err
	}
	if err := c.checkFilter(sz); err != nil {
		return err
	}
	m.first.setup(sz, c, nil) // no bit array: make sets it
	m.prm, m.size = prm, sz
	return nil
}

// FirstSizing is the geometry of the first sub-filter: the bit array
// every filter the maker makes starts with (Words words).
func (m *ScalableMaker) FirstSizing() Sizing { return m.size }

// Words is the length of the first sub-filter's bit array in 64-bit
// words, what Init's words must hold.
func (m *ScalableMaker) Words() int { return int(m.size.Bits / 64) }

// New returns an empty filter, as NewScalable with the maker's
// parameters would.
func (m *ScalableMaker) New() *Scalable {
	s := new(Scalable)
	m.make(s, newWords(m.size.Layout, m.size.Bits/64))
	return s
}

// Init makes *s an empty filter, as New would, whose first sub-filter's
// bit array is words; nil words: Init allocates them. s must be a zero
// Scalable that nothing else uses yet, and words, if given, exactly
// Words long, all zero, used by nothing else for as long as the filter
// lives, and in the blocked layout aligned to 64 bytes (a block is one
// cache line); words that are not get an error wrapping
// ErrInvalidSize and s stays zero.
func (m *ScalableMaker) Init(s *Scalable, words []uint64) error {
	if words == nil {
		words = newWords(m.size.Layout, m.size.Bits/64)
	}
	if err := checkWords(m.size, words); err != nil {
		return err
	}
	m.make(s, words)
	return nil
}

// checkWords checks a bit array a caller gives for a filter of geometry
// s (ScalableMaker.Init, StateLoader.LoadInto): exactly its words, and
// in the blocked layout starting on a 64-byte boundary (a block is one
// cache line); else an error wrapping ErrInvalidSize.
func checkWords(s Sizing, words []uint64) error {
	switch {
	case uint64(len(words)) != s.Bits/64:
		return fmt.Errorf("%w: a bit array of %d words for a filter of %d", ErrInvalidSize, len(words), s.Bits/64)
	case s.Layout == Blocked && uintptr(unsafe.Pointer(unsafe.SliceData(words)))&63 != 0:
		return fmt.Errorf("%w: a blocked bit array must start on a 64-byte boundary", ErrInvalidSize)
	}
	return nil
}

// make makes *s, a zero Scalable, an empty filter over words.
func (m *ScalableMaker) make(s *Scalable, words []uint64) {
	s.prm = m.prm
	s.first = m.first
	s.first.setWords(words)
	if s.first.concurrent {
		s.first.stripes = new([8]paddedU64)
	}
}
