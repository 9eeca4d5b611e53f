package server

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/bloomery/bloom"
)

// How the memory backend makes Bloom filters: a maker per set of
// creation options and layout (bloom.ScalableMaker: the options checked
// and the first sub-filter sized once, not for every key), which also
// holds the words that journal the creation; the value is allocated as
// one object when the filter is small (keyspace_value.go).

// filterMaker makes the filters of one set of creation options in one
// layout. It is immutable.
type filterMaker struct {
	key   makerKey
	maker *bloom.ScalableMaker
	bytes uint64 // the first sub-filter's: what a creation charges
	// insert is BF.INSERT's words that make the filter (read only): none
	// for BF.ADD's defaults, which are BF.INSERT's too (both are
	// defaultCreate, a constant; were the defaults configurable, a log
	// replayed under other ones would make other filters).
	insert [][]byte
	// reserve is BF.RESERVE's words after the key (read only)
	reserve [][]byte
}

type makerKey struct {
	o      createOpts
	layout bloom.Layout
}

// makers is a memstore's cache of filterMakers: the last one used, and up
// to maxMakers more (a client that picks a new rate for every filter
// gets a maker made for each, and no table without bound).
type makers struct {
	last atomic.Pointer[filterMaker]
	m    sync.Map // makerKey → *filterMaker
	n    atomic.Int64
}

const maxMakers = 256

// makerFor returns the maker of the filters made with o.
func (m *memstore) makerFor(o createOpts) (*filterMaker, error) {
	k := makerKey{o, m.layoutFor(o)}
	if fm := m.makers.last.Load(); fm != nil && fm.key == k {
		return fm, nil
	}
	if v, ok := m.makers.m.Load(k); ok {
		fm := v.(*filterMaker)
		m.makers.last.Store(fm)
		return fm, nil
	}
	fm, err := m.newMaker(k)
	if err != nil {
		return nil, err
	}
	if m.makers.n.Load() < maxMakers {
		if v, loaded := m.makers.m.LoadOrStore(k, fm); loaded {
			fm = v.(*filterMaker)
		} else {
			m.makers.n.Add(1)
		}
	}
	m.makers.last.Store(fm)
	return fm, nil
}

// newMaker makes the maker of k: errNoMemory when the first sub-filter is
// larger than one filter may be, errCannotCreate when the options cannot
// make a filter.
func (m *memstore) newMaker(k makerKey) (*filterMaker, error) {
	o := k.o
	if err := o.creatable(); err != nil {
		return nil, err
	}
	bm, err := bloom.NewScalableMaker(o.capacity, o.rate, bloom.WithGrowth(o.growth()),
		bloom.WithMaxBytes(m.maxFilter), bloom.WithLayout(k.layout))
	if err != nil {
		return nil, createError(err)
	}
	rate, capacity := fmtFloat(o.rate), fmtUint(o.capacity)
	fm := &filterMaker{key: k, maker: bm, bytes: bm.FirstSizing().Bytes(),
		reserve: append([][]byte{rate, capacity}, scalingArgs(o)...)}
	if o != defaultCreate { // else BF.INSERT's own defaults make it: a record of 71 bytes, not 138
		fm.insert = append([][]byte{[]byte("CAPACITY"), capacity, []byte("ERROR"), rate}, scalingArgs(o)...)
	}
	return fm, nil
}

// create makes an empty filter with fm for key, charging its first
// sub-filter to the budget before allocating it; the caller holds key's
// lock. It returns the entry
// and the key as the keyspace is to store it (newBloomEntry).
func (m *memstore) create(fm *filterMaker, key string) (*entry, string, error) {
	if err := m.reserve(fm.bytes); err != nil {
		return nil, "", err
	}
	e, stored := newBloomEntry(fm.maker, key, &m.values[m.ks.shardOf(key)])
	e.filter.SetGrowHook(m.charge)
	return e, stored, nil
}

// createError is the reply when a filter cannot be planned: too large
// for the layout or the per-filter limit, as when memory is short, else
// RedisBloom's "could not".
func createError(err error) error {
	if errors.Is(err, bloom.ErrTooLarge) {
		return errNoMemory
	}
	return errCannotCreate
}
