package cuckoo

import (
	"encoding/binary"
	"math/bits"

	"github.com/bloomery/bloom/internal/hugepage"
)

// Slots in buckets. A bucket of up to 8 slots is read as one 64-bit
// little-endian word and searched with byte-parallel arithmetic (SWAR)
// without branching per slot; larger buckets slot by slot. Each
// sub-filter's memory has wordPad bytes past its end, never written, so
// that the word of its last bucket can be read.

const (
	lsb     = 0x0101010101010101
	low7    = 0x7f7f7f7f7f7f7f7f
	msb     = 0x8080808080808080
	wordPad = 8
)

// slotBits is the mask of the high bit of each slot of a bucket in its
// word, or 0 when buckets are wider than a word.
func slotBits(bucketSize uint64) uint64 {
	switch {
	case bucketSize > 8:
		return 0
	case bucketSize == 8:
		return msb
	}
	return msb & (1<<(8*bucketSize) - 1)
}

// zeroBytes has the high bit of each byte of v that is 0 set, and no
// other bit.
func zeroBytes(v uint64) uint64 { return ^((v&low7 + low7) | v) & msb }

// word is the bucket at offset o of s as a word: 4 bytes for buckets of
// up to 4 slots (so that an aligned bucket of 4 never straddles two cache
// lines), else 8; read into the padding past s's end if need be.
func (f *Filter) word(s *subFilter, o uint64) uint64 {
	if f.bucketSize <= 4 {
		return uint64(binary.LittleEndian.Uint32(s.data[o : o+4]))
	}
	return binary.LittleEndian.Uint64(s.data[o : o+8])
}

// matches has the high bit of each slot of the bucket at o that holds fp
// set (buckets of up to 8 slots).
func (f *Filter) matches(s *subFilter, o uint64, fp byte) uint64 {
	return zeroBytes(f.word(s, o)^uint64(fp)*lsb) & f.slots
}

// has reports whether the bucket at o holds fp.
func (f *Filter) has(s *subFilter, o uint64, fp byte) bool {
	if f.slots != 0 {
		return f.matches(s, o, fp) != 0
	}
	for _, c := range s.data[o : o+f.bucketSize] {
		if c == fp {
			return true
		}
	}
	return false
}

// count counts the slots of the bucket at o that hold fp.
func (f *Filter) count(s *subFilter, o uint64, fp byte) uint64 {
	if f.slots != 0 {
		return uint64(bits.OnesCount64(f.matches(s, o, fp)))
	}
	n := uint64(0)
	for _, c := range s.data[o : o+f.bucketSize] {
		if c == fp {
			n++
		}
	}
	return n
}

// first is the offset of the first slot of the bucket at o that holds
// fp (0 for an empty slot), or −1.
func (f *Filter) first(s *subFilter, o uint64, fp byte) int64 {
	if f.slots != 0 {
		m := f.matches(s, o, fp)
		if m == 0 {
			return -1
		}
		return int64(o) + int64(bits.TrailingZeros64(m)/8)
	}
	for j, c := range s.data[o : o+f.bucketSize] {
		if c == fp {
			return int64(o) + int64(j)
		}
	}
	return -1
}

// index is the bucket number of hash h in s: h mod nb.
func (s *subFilter) index(h uint64) uint64 {
	if s.pow2 {
		return h & s.mask
	}
	return h % s.nb
}

// newSub makes a sub-filter of nb buckets of bucketSize slots.
func newSub(nb, bucketSize uint64) subFilter {
	size := nb * bucketSize
	s := subFilter{data: make([]byte, size, size+wordPad), nb: nb}
	hugepage.Advise(s.data)
	if nb&(nb-1) == 0 {
		s.mask, s.pow2 = nb-1, true
	}
	return s
}
