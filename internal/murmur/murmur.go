// Package murmur is MurmurHash64A (Austin Appleby's MurmurHash2, 64-bit
// variant for 64-bit platforms), the hash RedisBloom gives items: its
// cuckoo filters hash with seed 0 (package cuckoo), its Bloom filters
// twice (docs/FORMAT.md, layout 3). It is not a keyed hash. Safe for
// concurrent use; allocates nothing.
package murmur

import "encoding/binary"

// Hash64A is MurmurHash64A of b with seed: 8-byte blocks read
// little-endian, then the 1–7 tail bytes, then the final avalanche.
func Hash64A(b []byte, seed uint64) uint64 {
	const (
		m = 0xc6a4a7935bd1e995
		r = 47
	)
	h := seed ^ uint64(len(b))*m
	for ; len(b) >= 8; b = b[8:] {
		k := binary.LittleEndian.Uint64(b)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	if len(b) > 0 {
		var t uint64
		for i, c := range b {
			t |= uint64(c) << (8 * i)
		}
		h ^= t
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}
