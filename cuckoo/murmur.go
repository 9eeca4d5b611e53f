package cuckoo

import "encoding/binary"

// Hash is the hash RedisBloom's cuckoo filters give item: MurmurHash64A
// (the 64-bit MurmurHash2 for 64-bit platforms) with seed 0. The *Hash
// methods take it, so that an item hashed once can be tested and added
// without hashing it again.
func Hash(item []byte) uint64 { return murmur64A(item, 0) }

// HashString is Hash of the bytes of s, without copying them.
func HashString(s string) uint64 { return murmur64A(bytesOf(s), 0) }

// murmur64A is MurmurHash64A of b with seed: 8-byte blocks read
// little-endian, then the 1–7 tail bytes, then the final avalanche.
func murmur64A(b []byte, seed uint64) uint64 {
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
