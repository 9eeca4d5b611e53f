package bloom

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// sizeCache memoises Size per (layout, n, p): a server creates filters
// with the same few parameters over and over. It is a direct-mapped table
// of a fixed number of slots, each an immutable entry behind an atomic
// pointer: lookups take no lock, a miss overwrites its slot, and the
// memory is bounded (about 64 KB) however many distinct parameters
// arrive, so a client sending a fresh rate with every request costs one
// solve each (a few microseconds) and evicts others, never memory.
var sizeCache sizingCache

const sizeCacheBits = 10

const sizeCacheSlots = 1 << sizeCacheBits

type sizingCache struct {
	slots [sizeCacheSlots]atomic.Pointer[Sizing]
}

func cacheSlot(layout Layout, n uint64, p float64) uint64 {
	h := n*0x9e3779b97f4a7c15 ^ math.Float64bits(p) ^ uint64(layout)<<56
	hi, lo := bits.Mul64(h, 0xbf58476d1ce4e5b9)
	return (hi ^ lo) >> (64 - sizeCacheBits)
}

// get returns the memoised sizing for (layout, n, p), if any.
func (c *sizingCache) get(layout Layout, n uint64, p float64) (Sizing, bool) {
	s := c.slots[cacheSlot(layout, n, p)].Load()
	if s == nil || s.N != n || s.P != p || s.Layout != layout {
		return Sizing{}, false
	}
	return *s, true
}

// put memoises s, replacing whatever its slot held.
func (c *sizingCache) put(s Sizing) {
	c.slots[cacheSlot(s.Layout, s.N, s.P)].Store(&s)
}

// reset empties the cache (for tests and benchmarks that must miss).
func (c *sizingCache) reset() {
	for i := range c.slots {
		c.slots[i].Store(nil)
	}
}
