package bloom

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// word reads word i, atomically in a concurrent filter.
func (f *Filter) word(i uint64) uint64 {
	if f.concurrent {
		return atomic.LoadUint64(&f.words()[i])
	}
	return f.words()[i]
}

// popcount is the number of set bits in words [from, to).
func (f *Filter) popcount(from, to uint64) uint64 {
	var c int
	for i := from; i < to; i++ {
		c += bits.OnesCount64(f.word(i))
	}
	return uint64(c)
}

// FillRatio is the fraction of bits set. It reads the whole bit array.
func (f *Filter) FillRatio() float64 {
	return float64(f.popcount(0, uint64(len(f.words())))) / float64(f.m())
}

// Count estimates the number of distinct items added from the bits set
// (Swamidass & Baldi, per block for the blocked layout). It reads the
// whole bit array. Beyond capacity the estimate grows less precise; for
// a saturated filter it is a lower bound.
func (f *Filter) Count() uint64 {
	if f.layout != Blocked {
		return uint64(math.Round(throws(f.popcount(0, uint64(len(f.words()))), f.m()) / float64(f.k)))
	}
	t := 0.0
	for b := range f.blocks() {
		t += throws(f.popcount(b*8, b*8+8), BlockBits)
	}
	return uint64(math.Round(t / float64(f.k)))
}

// throws estimates how many uniform probes into m bits set x of them:
// ln(1 - x/m) / ln(1 - 1/m), with a full array counted as m-1/2 bits set.
func throws(x, m uint64) float64 {
	if x == 0 {
		return 0
	}
	fx := math.Min(float64(x), float64(m)-0.5)
	return math.Log1p(-fx/float64(m)) / math.Log1p(-1/float64(m))
}

// EstimatedFPR is the false-positive rate the filter has now, from its
// bits: the fill ratio to the k-th power (averaged over blocks for the
// blocked layout). It reads the whole bit array.
func (f *Filter) EstimatedFPR() float64 {
	k := float64(f.k)
	if f.layout != Blocked {
		return math.Pow(f.FillRatio(), k)
	}
	var byPop [BlockBits + 1]uint64
	for b := range f.blocks() {
		byPop[f.popcount(b*8, b*8+8)]++
	}
	s := 0.0
	for x, c := range byPop {
		if c != 0 {
			s += float64(c) * math.Pow(float64(x)/BlockBits, k)
		}
	}
	return s / float64(f.blocks())
}

// EstimateFromFill estimates, from the number of set bits alone (all a
// Redis BITCOUNT gives), the distinct items added to a filter of geometry
// s and its false-positive rate now (the model's rate at that count).
func EstimateFromFill(s Sizing, setBits uint64) (count, fpr float64) {
	if s.K == 0 || s.Bits == 0 {
		return 0, 0
	}
	count = throws(min(setBits, s.Bits), s.Bits) / float64(s.K)
	return count, ExpectedFPR(s.Layout, s.Bits, s.K, uint64(math.Round(count)))
}
