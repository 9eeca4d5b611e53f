package bloom

import "unsafe"

// The blocked layout's hot path (the bit positions are described at the
// top of probe.go). Add and Test for k <= maxStraightK run as one
// straight line of probes: a switch on k falls through them with constant
// shifts, with no loop, no call and no bounds check.

const fieldsPerWord = 7 // 9-bit fields in one 64-bit probe word

// maxStraightK is the largest k of the straight-line hot path; filters
// with more probes (rare: p below about 1e-5) take addBlockedLong and
// testBlockedLong through addOther and testOther.
const maxStraightK = 2 * fieldsPerWord

// block returns the 8 words of h's block. mulhi(H1, blocks) < blocks, so
// the block is always inside the array and needs no bounds check.
func (f *Filter) block(h Hash) *[8]uint64 {
	off := uintptr(mulhi(h.H1, f.blocks())) * 64
	return (*[8]uint64)(unsafe.Add(unsafe.Pointer(f.wp), off))
}

// addBlocked sets h's k probes (k <= maxStraightK), counts the item in
// f.inserted when any was unset, and reports whether one was. Probes 1-7
// are fields 0-6 of H2, probes 8-14 fields 0-6 of probeWord(h, 1); the
// order in which they are set does not matter. It stays a leaf that
// counts the item itself, so Add only returns its result: measured at
// 10^7 items, k = 9 (docs/BENCHMARKS.md, issue 15), an addBlocked with a
// call on any path, or whose caller counted after it returned, made a
// single Add 1.6-1.7× slower for the same bits. On amd64 Add, AddHash and
// AddHashes call addBlockAsm instead, which sets the same bits
// (probe_add_amd64.go); addBlocked serves other platforms, race-detector
// builds and the purego tag, and is the reference the assembly is tested
// against.
func (f *Filter) addBlocked(h Hash) bool {
	blk, w := f.block(h), h.H2
	var c, w2 uint64
	if f.k > fieldsPerWord {
		w2 = probeWord(h, 1)
	}
	switch f.k {
	case 14:
		c |= setProbe(blk, w2>>54)
		fallthrough
	case 13:
		c |= setProbe(blk, w2>>45)
		fallthrough
	case 12:
		c |= setProbe(blk, w2>>36)
		fallthrough
	case 11:
		c |= setProbe(blk, w2>>27)
		fallthrough
	case 10:
		c |= setProbe(blk, w2>>18)
		fallthrough
	case 9:
		c |= setProbe(blk, w2>>9)
		fallthrough
	case 8:
		c |= setProbe(blk, w2)
		fallthrough
	case 7:
		c |= setProbe(blk, w>>54)
		fallthrough
	case 6:
		c |= setProbe(blk, w>>45)
		fallthrough
	case 5:
		c |= setProbe(blk, w>>36)
		fallthrough
	case 4:
		c |= setProbe(blk, w>>27)
		fallthrough
	case 3:
		c |= setProbe(blk, w>>18)
		fallthrough
	case 2:
		c |= setProbe(blk, w>>9)
		fallthrough
	case 1:
		c |= setProbe(blk, w)
	}
	f.inserted += b2u(c != 0)
	return c != 0
}

// testBlocked reports whether all of h's k probes are set, probing all of
// them with no branch on the bits (see addBlocked for the fields). Each
// probe ANDs its bit, shifted down to bit 0, into a: 9 instructions a
// probe on amd64, against 13 for building the bit's mask and testing it.
// Filters with k <= 14 on a CPU with AVX-512F use testBlockVec7 or
// testBlockVec14 instead (probe_vec.go).
func (f *Filter) testBlocked(h Hash) bool {
	blk, w := f.block(h), h.H2
	var w2 uint64
	a := ^uint64(0)
	if f.k > fieldsPerWord {
		w2 = probeWord(h, 1)
	}
	switch f.k {
	case 14:
		a &= probeBit(blk, w2>>54)
		fallthrough
	case 13:
		a &= probeBit(blk, w2>>45)
		fallthrough
	case 12:
		a &= probeBit(blk, w2>>36)
		fallthrough
	case 11:
		a &= probeBit(blk, w2>>27)
		fallthrough
	case 10:
		a &= probeBit(blk, w2>>18)
		fallthrough
	case 9:
		a &= probeBit(blk, w2>>9)
		fallthrough
	case 8:
		a &= probeBit(blk, w2)
		fallthrough
	case 7:
		a &= probeBit(blk, w>>54)
		fallthrough
	case 6:
		a &= probeBit(blk, w>>45)
		fallthrough
	case 5:
		a &= probeBit(blk, w>>36)
		fallthrough
	case 4:
		a &= probeBit(blk, w>>27)
		fallthrough
	case 3:
		a &= probeBit(blk, w>>18)
		fallthrough
	case 2:
		a &= probeBit(blk, w>>9)
		fallthrough
	case 1:
		a &= probeBit(blk, w)
	}
	return a&1 != 0
}

// addBlockedLong sets h's probes for any k, for k > maxStraightK: a loop over
// probe words of fieldsPerWord probes each, and returns the bits that
// were unset (0 if none).
func (f *Filter) addBlockedLong(h Hash) uint64 {
	blk, w := f.block(h), h.H2
	var c uint64
	for j, left := uint64(1), f.k; ; j++ {
		n := min(left, fieldsPerWord)
		for range n {
			c |= setProbe(blk, w)
			w >>= 9
		}
		if left -= n; left == 0 {
			return c
		}
		w = probeWord(h, j)
	}
}

// testBlockedLong is testBlocked for any k, for k > maxStraightK.
func (f *Filter) testBlockedLong(h Hash) bool {
	blk, w := f.block(h), h.H2
	var m uint64
	for j, left := uint64(1), f.k; ; j++ {
		n := min(left, fieldsPerWord)
		m |= missing(blk, w, n)
		if left -= n; left == 0 {
			return m == 0
		}
		w = probeWord(h, j)
	}
}

// setProbe sets the probe at the low 9 bits of x and returns its bit if it
// was unset, else 0.
func setProbe(blk *[8]uint64, x uint64) uint64 {
	i, bit := (x>>6)&7, uint64(1)<<(x&63)
	old := blk[i]
	blk[i] = old | bit
	return bit &^ old
}

// missing returns the bits, among the first n (<= 7) probes of probe word
// w, that are not set in blk: 0 if all are set. Probe j is the 9-bit field
// w>>(9j): word in bits 6-8, bit in bits 0-5. Small enough to inline.
func missing(blk *[8]uint64, w uint64, n uint32) uint64 {
	var m uint64
	for range n {
		m |= probeMiss(blk, w)
		w >>= 9
	}
	return m
}

// probeMiss is the probe at the low 9 bits of x if unset in blk, else 0.
func probeMiss(blk *[8]uint64, x uint64) uint64 {
	return uint64(1) << (x & 63) &^ blk[(x>>6)&7]
}

// b2u is 1 for true and 0 for false, without a branch.
func b2u(b bool) uint64 {
	var u uint64
	if b {
		u = 1
	}
	return u
}

// probeBit is the word of blk holding the probe at the low 9 bits of x,
// shifted right so that the probe's bit is bit 0 (x&63 is the shift
// count, so the compiler needs no mask or range check).
func probeBit(blk *[8]uint64, x uint64) uint64 {
	return blk[(x>>6)&7] >> (x & 63)
}
