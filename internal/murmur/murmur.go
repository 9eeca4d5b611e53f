// Package murmur is MurmurHash64A (Austin Appleby's MurmurHash2, 64-bit
// variant for 64-bit platforms), the hash RedisBloom gives items: its
// cuckoo filters hash with seed 0 (package cuckoo), its Bloom filters
// twice (docs/FORMAT.md, layout 3); and the 32-bit MurmurHash2 of
// RedisBloom's oldest Bloom filters (hash 4). Neither is a keyed hash.
// Safe for concurrent use; allocates nothing.
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

// Hash2 is MurmurHash2 (32-bit) of b with seed: 4-byte blocks read
// little-endian, then the 1–3 tail bytes, then the final avalanche.
func Hash2(b []byte, seed uint32) uint32 {
	const (
		m = 0x5bd1e995
		r = 24
	)
	h := seed ^ uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		k := binary.LittleEndian.Uint32(b)
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
