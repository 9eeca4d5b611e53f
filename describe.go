package bloom

import (
	"math/bits"
	"sync/atomic"
)

// What a Scalable or Counting filter is made of, for tools that describe
// a filter (bloomery info) without knowing its encoding: the parameters a
// Scalable filter was made with, each sub-filter's geometry, items and
// bits set, and how a Counting filter's counters are used. (A Filter's
// are its Sizing, Inserted and FillRatio.)

// InitialCap is the capacity n0 of the first sub-filter, as given to
// NewScalable.
func (s *Scalable) InitialCap() uint64 { return s.rule().n0 }

// Growth returns the rule the filter grows by, defaults filled in:
// Expansion (0 when NonScaling, except in the RedisBloom layout, which
// records it as given), Tightening, FirstShare and UniformLayout (true
// for a blocked filter read from a file of format version 1). NewScalable
// with WithGrowth of it, InitialCap and TargetFPR makes a filter that
// grows the same way.
func (s *Scalable) Growth() Growth {
	g := Growth{Expansion: s.prm.s, NonScaling: s.nonScaling(), Tightening: s.prm.r, FirstShare: s.prm.f,
		UniformLayout: s.prm.uniform}
	if g.NonScaling && s.prm.rb {
		g.Expansion = uint64(s.prm.rbGrowth) // recorded as given
	}
	return g
}

// RedisBloomOptions is the options word of a filter in the RedisBloom
// layout, as its dump header records it (FORCE64 = 4: 64-bit hashing,
// NO_SCALING = 8, NOROUND = 1 and ENTS_IS_BITS = 2: how new sub-filters
// are sized); 0 for the other layouts.
func (s *Scalable) RedisBloomOptions() uint32 { return s.prm.rbOptions }

// Layout is the filter's layout: that of every sub-filter, except that
// in the blocked layout small sub-filters may be classic (unless
// Growth().UniformLayout; SubFilters has each one's).
func (s *Scalable) Layout() Layout { return s.prm.layout }

// HashID identifies the hash of every sub-filter.
func (s *Scalable) HashID() HashID { return s.first.HashID() }

// SubFilter describes one sub-filter of a Scalable filter.
type SubFilter struct {
	Sizing  Sizing // its geometry: capacity N at rate P, Bits, K, Layout
	Items   uint64 // the items it took (Adds that reported new)
	SetBits uint64 // the bits set in its bit array
}

// SubFilters describes the sub-filters, the first (oldest) first. It
// reads every bit array to count the bits set; on a WithConcurrent filter
// that Adds are changing, each count is of no single moment.
func (s *Scalable) SubFilters() []SubFilter {
	fs := s.filters()
	out := make([]SubFilter, len(fs))
	for i, f := range fs {
		out[i] = SubFilter{Sizing: f.Sizing(), Items: f.Inserted(), SetBits: f.popcount(0, uint64(len(f.words())))}
	}
	return out
}

// SubFilterGeometry describes the sub-filters as SubFilters does, the
// first (oldest) first, without reading their bit arrays: SetBits is 0.
// It costs a few words per sub-filter (BF.DEBUG's).
func (s *Scalable) SubFilterGeometry() []SubFilter {
	fs := s.filters()
	out := make([]SubFilter, len(fs))
	for i, f := range fs {
		out[i] = SubFilter{Sizing: f.Sizing(), Items: f.Inserted()}
	}
	return out
}

// CountingStats is how a Counting filter's counters are used.
type CountingStats struct {
	InUse     uint64 // counters above 0: the bits a Filter would have set
	Saturated uint64 // counters at 15, which Remove no longer decrements
}

// Stats counts the counters in use and the saturated ones. It reads the
// whole counter array; on a WithConcurrent filter that others are
// changing, the counts are of no single moment.
func (c *Counting) Stats() CountingStats {
	const low = 0x1111_1111_1111_1111 // the low bit of each 4-bit counter
	var st CountingStats
	for i := range c.words {
		w := c.words[i]
		if c.concurrent {
			w = atomic.LoadUint64(&c.words[i])
		}
		nonzero := w | w>>1 // per counter, in its low bit: some bit set
		nonzero |= nonzero >> 2
		full := w & (w >> 1) // every bit set
		full &= full >> 2
		st.InUse += uint64(bits.OnesCount64(nonzero & low))
		st.Saturated += uint64(bits.OnesCount64(full & low))
	}
	return st
}
