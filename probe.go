package bloom

import (
	"math/bits"
	"sync/atomic"
)

// Where an item's bits live.
//
// Bit positions are logical offsets o in [0, m). Offset o is stored in word
// o/64 at bit (o%64)^7: with little-endian words this is bit 7-(o%8) of
// byte o/8, the numbering of Redis SETBIT/GETBIT, so the bit array's bytes
// are exactly a Redis bitmap of the same filter.
//
// Blocked: the block is mulhi(H1, blocks); probe j takes the 9-bit field
// pos_j of a probe word (fields 0-6 of H2, then of probeWord(h, 1), …) and
// sets logical offset block*512 + (pos_j ^ 7), which is word pos_j/64 of
// the block at bit pos_j%64: the ^7 of the Redis numbering cancels out, so
// the hot path needs no byte-order arithmetic. Every probe is an
// independent uniform position in the 512-bit block.
//
// Classic: probe i sets logical offset mulhi(w_i, m) ^ 7 (again so that
// the in-memory bit is simply bit mulhi%64), with w_0 = H1, w_1 = H2 and
// w_i = probeWord(h, i) for i >= 2: k independent 64-bit words mapped to
// [0, m) by a 64x64->128 multiply, never a collapsing h1 + i*h2 or a
// biased modulo.
//
// RedisBloom: probe i is physical bit (H1 + i·H2) mod m, RedisBloom's own
// double hashing (redisbloom.go), kept only to answer as RedisBloom does.

// mulhi maps x uniformly onto [0, n).
func mulhi(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}

// classicWord returns w_i of a classic-layout probe sequence.
func classicWord(h Hash, i uint32) uint64 {
	switch i {
	case 0:
		return h.H1
	case 1:
		return h.H2
	}
	return probeWord(h, uint64(i))
}

// addClassic reads all k probes first (their cache misses overlap),
// then sets the missing ones; an item already present writes nothing.
func (f *Filter) addClassic(h Hash) bool {
	if f.missingClassic(h) == 0 {
		return false
	}
	words, m := f.words(), f.m()
	for i := range f.k {
		o := mulhi(classicWord(h, i), m)
		words[o>>6] |= 1 << (o & 63)
	}
	return true
}

// missingClassic returns the probe bits of h that are unset (OR-ed into
// one word), 0 when all are set, probing all k with no branch on the bits.
func (f *Filter) missingClassic(h Hash) uint64 {
	words, m := f.words(), f.m()
	o := mulhi(h.H1, m)
	miss := uint64(1) << (o & 63) &^ words[o>>6]
	if f.k > 1 {
		o = mulhi(h.H2, m)
		miss |= uint64(1) << (o & 63) &^ words[o>>6]
	}
	x := h.H2 + golden // probeWord(h, j) is mix64(x) ^ H1 with x = H2 + j·golden
	for j := uint32(2); j < f.k; j++ {
		x += golden
		o = mulhi(mix64(x)^h.H1, m)
		miss |= uint64(1) << (o & 63) &^ words[o>>6]
	}
	return miss
}

// smallClassicWords is the largest classic bit array testClassic probes
// without branches: 8 cache lines.
const smallClassicWords = 64

// testClassic stops at the first unset bit of a large array, where each
// probe may be a cache miss of its own and an absent item needs about two
// probes on average; a small one, all in a few cache lines, it probes
// without branches (missingClassic).
func (f *Filter) testClassic(h Hash) bool {
	words, m := f.words(), f.m()
	if len(words) <= smallClassicWords {
		return f.missingClassic(h) == 0
	}
	for i := range f.k {
		o := mulhi(classicWord(h, i), m)
		if words[o>>6]&(1<<(o&63)) == 0 {
			return false
		}
	}
	return true
}

// forEachOffset calls fn with the physical bit index (word*64 + bit) of
// each of h's k probes, in probe order. The logical offset (Redis
// numbering) of physical index x is x ^ 7.
func (f *Filter) forEachOffset(h Hash, fn func(x uint64)) {
	forEachOffset(f.layout, f.ext.probeBits(f.m()), f.k, h, fn)
}

// forEachOffset is Filter.forEachOffset for a geometry: layout, m bits
// (a multiple of 512 for Blocked; for RedisBloom, those the probes land
// in), k probes.
func forEachOffset(layout Layout, m uint64, k uint32, h Hash, fn func(x uint64)) {
	switch layout {
	case Classic:
		for i := range k {
			fn(mulhi(classicWord(h, i), m))
		}
		return
	case RedisBloom:
		for i := range uint64(k) {
			fn((h.H1 + i*h.H2) % m)
		}
		return
	}
	base := mulhi(h.H1, m/BlockBits) * BlockBits
	w, left := h.H2, k
	for j := uint64(1); ; j++ {
		n := min(left, fieldsPerWord)
		for range n {
			fn(base + w&511)
			w >>= 9
		}
		if left -= n; left == 0 {
			return
		}
		w = probeWord(h, j)
	}
}

// Offsets appends to dst the logical bit offsets (Redis SETBIT numbering:
// bit 7-(o%8) of byte o/8) of the k bits an item with hash h sets, and
// returns the extended slice. Other stores of the same filter (files,
// Redis bitmaps) use exactly these offsets.
func (f *Filter) Offsets(h Hash, dst []uint64) []uint64 {
	f.forEachOffset(h, func(x uint64) { dst = append(dst, x^7) })
	return dst
}

// Offsets appends to dst the logical bit offsets of an item with hash h in
// a filter of this geometry (see Filter.Offsets), without a bit array: a
// Redis-backed filter probes its bitmaps with them. For the blocked layout
// all k offsets fall in one 512-bit block, offset/512.
func (s Sizing) Offsets(h Hash, dst []uint64) []uint64 {
	forEachOffset(s.Layout, s.Bits, s.K, h, func(x uint64) { dst = append(dst, x^7) })
	return dst
}

// addAtomic sets h's bits with atomic OR; it reports whether this call
// changed any bit. Two goroutines adding the same new item at once may
// both report true.
func (f *Filter) addAtomic(h Hash) bool {
	changed := false
	switch f.layout {
	case RedisBloom:
		return f.addRedisBloomAtomic(h)
	case Classic:
		for i := range f.k {
			changed = orBit(f.words(), mulhi(classicWord(h, i), f.m())) || changed
		}
		return changed
	}
	base := mulhi(h.H1, f.blocks()) * BlockBits
	w, left := h.H2, f.k
	for j := uint64(1); ; j++ {
		n := min(left, fieldsPerWord)
		for range n {
			changed = orBit(f.words(), base+w&511) || changed
			w >>= 9
		}
		if left -= n; left == 0 {
			return changed
		}
		w = probeWord(h, j)
	}
}

// orBit sets physical bit x atomically and reports whether it was unset.
func orBit(words []uint64, x uint64) bool {
	bit := uint64(1) << (x & 63)
	p := &words[x>>6]
	return atomic.LoadUint64(p)&bit == 0 && atomic.OrUint64(p, bit)&bit == 0
}

func (f *Filter) testAtomic(h Hash) bool {
	var miss uint64
	switch f.layout {
	case RedisBloom:
		return f.testRedisBloomAtomic(h)
	case Classic:
		for i := range f.k {
			x := mulhi(classicWord(h, i), f.m())
			miss |= uint64(1) << (x & 63) &^ atomic.LoadUint64(&f.words()[x>>6])
		}
		return miss == 0
	}
	base := mulhi(h.H1, f.blocks()) * BlockBits
	w, left := h.H2, f.k
	for j := uint64(1); ; j++ {
		n := min(left, fieldsPerWord)
		for range n {
			x := base + w&511
			miss |= uint64(1) << (x & 63) &^ atomic.LoadUint64(&f.words()[x>>6])
			w >>= 9
		}
		if left -= n; left == 0 {
			return miss == 0
		}
		w = probeWord(h, j)
	}
}

func (f *Filter) countNew(h Hash) {
	if f.stripes != nil {
		atomic.AddUint64(&f.stripes[h.H2>>61].v, 1)
		return
	}
	f.inserted++
}

// Inserted is the number of Add calls that reported a new item since the
// filter was made or cleared (or, after Union or Intersect, the estimate
// Count). In exclusive use it is at most the number of distinct items
// added; in a WithConcurrent filter, goroutines racing to add the same new
// item may each report it new, so it can exceed that by those races.
func (f *Filter) Inserted() uint64 {
	if f.stripes == nil {
		return f.inserted
	}
	var s uint64
	for i := range f.stripes {
		s += atomic.LoadUint64(&f.stripes[i].v)
	}
	return s
}

func (f *Filter) setInserted(v uint64) {
	if f.stripes != nil {
		for i := range f.stripes {
			atomic.StoreUint64(&f.stripes[i].v, 0)
		}
		atomic.StoreUint64(&f.stripes[0].v, v)
		return
	}
	f.inserted = v
}
