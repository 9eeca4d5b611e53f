package bloom

import (
	"math/bits"
	"sync/atomic"

	"github.com/dchest/siphash"
)

// Where an item's bits live.
//
// Bit positions are logical offsets o in [0, m). Offset o is stored in word
// o/64 at bit (o%64)^7: with little-endian words this is bit 7-(o%8) of
// byte o/8, the numbering of Redis SETBIT/GETBIT, so the bit array's bytes
// are exactly a Redis bitmap of the same filter.
//
// Blocked: the block is mulhi(H1, blocks); the in-block positions are
// consecutive 9-bit fields of H2 (7 per word), then of probeWord(h, 1), …
// Every probe is an independent uniform position in the 512-bit block.
//
// Classic: probe i is at mulhi(w_i, m) with w_0 = H1, w_1 = H2 and
// w_i = probeWord(h, i) for i >= 2: k independent 64-bit words, mapped to
// [0, m) by a 64x64->128 multiply, never by a collapsing h1 + i*h2 or a
// biased modulo.

// sipHash128 is SipHash-2-4 with 128-bit output.
func sipHash128(k0, k1 uint64, b []byte) (uint64, uint64) { return siphash.Hash128(k0, k1, b) }

// mulhi maps x uniformly onto [0, n).
func mulhi(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}

const fieldsPerWord = 7 // 9-bit fields in one 64-bit probe word

func (f *Filter) addBlocked(h Hash) bool {
	b := mulhi(h.H1, f.blocks) * 8
	blk := (*[8]uint64)(f.words[b : b+8])
	var changed uint64
	w, left := h.H2, f.k
	for j := uint64(1); ; j++ {
		n := min(left, fieldsPerWord)
		for range n {
			pos := w & 511
			w >>= 9
			bit := uint64(1) << ((pos & 63) ^ 7)
			old := blk[pos>>6]
			changed |= ^old & bit
			blk[pos>>6] = old | bit
		}
		if left -= n; left == 0 {
			break
		}
		w = probeWord(h, j)
	}
	return changed != 0
}

func (f *Filter) testBlocked(h Hash) bool {
	b := mulhi(h.H1, f.blocks) * 8
	blk := (*[8]uint64)(f.words[b : b+8])
	var miss uint64
	w, left := h.H2, f.k
	for j := uint64(1); ; j++ {
		n := min(left, fieldsPerWord)
		for range n {
			pos := w & 511
			w >>= 9
			miss |= ^blk[pos>>6] & (1 << ((pos & 63) ^ 7))
		}
		if left -= n; left == 0 {
			break
		}
		w = probeWord(h, j)
	}
	return miss == 0
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

func (f *Filter) addClassic(h Hash) bool {
	var changed uint64
	for i := range f.k {
		o := mulhi(classicWord(h, i), f.m)
		bit := uint64(1) << ((o & 63) ^ 7)
		old := f.words[o>>6]
		changed |= ^old & bit
		f.words[o>>6] = old | bit
	}
	return changed != 0
}

// testClassic stops at the first unset bit: each probe may be a cache miss
// of its own, and an absent item needs about two probes on average.
func (f *Filter) testClassic(h Hash) bool {
	for i := range f.k {
		o := mulhi(classicWord(h, i), f.m)
		if f.words[o>>6]&(1<<((o&63)^7)) == 0 {
			return false
		}
	}
	return true
}

// offsets calls fn with the logical offset of each of h's k bits, in probe
// order. It defines the layout for other stores (files, Redis).
func (f *Filter) offsets(h Hash, fn func(o uint64)) {
	if f.layout == Classic {
		for i := range f.k {
			fn(mulhi(classicWord(h, i), f.m))
		}
		return
	}
	base := mulhi(h.H1, f.blocks) * BlockBits
	w, left := h.H2, f.k
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

// Offsets appends to dst the logical bit offsets (Redis SETBIT numbering)
// of the k bits an item with hash h sets, and returns the extended slice.
// Other stores of the same filter (files, Redis bitmaps) use exactly these.
func (f *Filter) Offsets(h Hash, dst []uint64) []uint64 {
	f.offsets(h, func(o uint64) { dst = append(dst, o) })
	return dst
}

// addAtomic sets h's bits with atomic OR; it reports whether this call
// changed any bit. Two goroutines adding the same new item at once may
// both report true.
func (f *Filter) addAtomic(h Hash) bool {
	changed := false
	if f.layout == Classic {
		for i := range f.k {
			changed = orBit(f.words, mulhi(classicWord(h, i), f.m)) || changed
		}
		return changed
	}
	base := mulhi(h.H1, f.blocks) * BlockBits
	w, left := h.H2, f.k
	for j := uint64(1); ; j++ {
		n := min(left, fieldsPerWord)
		for range n {
			changed = orBit(f.words, base+w&511) || changed
			w >>= 9
		}
		if left -= n; left == 0 {
			return changed
		}
		w = probeWord(h, j)
	}
}

// orBit sets logical bit o atomically and reports whether it was unset.
func orBit(words []uint64, o uint64) bool {
	bit := uint64(1) << ((o & 63) ^ 7)
	p := &words[o>>6]
	return atomic.LoadUint64(p)&bit == 0 && atomic.OrUint64(p, bit)&bit == 0
}

func (f *Filter) testAtomic(h Hash) bool {
	var miss uint64
	if f.layout == Classic {
		for i := range f.k {
			o := mulhi(classicWord(h, i), f.m)
			miss |= ^atomic.LoadUint64(&f.words[o>>6]) & (1 << ((o & 63) ^ 7))
		}
		return miss == 0
	}
	base := mulhi(h.H1, f.blocks) * BlockBits
	w, left := h.H2, f.k
	for j := uint64(1); ; j++ {
		n := min(left, fieldsPerWord)
		for range n {
			o := base + w&511
			miss |= ^atomic.LoadUint64(&f.words[o>>6]) & (1 << ((o & 63) ^ 7))
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
// Count). It is at most the number of distinct items added.
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
