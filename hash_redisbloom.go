package bloom

import "encoding/binary"

// RedisBloom's item hash (HashMurmur64A): two rounds of MurmurHash64A,
// the second seeded with the first, as RedisBloom hashes every item of a
// Bloom filter made by its commands (docs/FORMAT.md, layout 3).

// redisBloomSeed is the seed of the first round: MurmurHash64A's own
// multiplier.
const redisBloomSeed = 0xc6a4a7935bd1e995

// RedisBloomHash is RedisBloom's hash of item: H1 = MurmurHash64A(item,
// seed 0xc6a4a7935bd1e995), H2 = MurmurHash64A(item, seed H1). Filters in
// the RedisBloom layout hash with it (Filter.Hash); it is not a good
// general-purpose 128-bit hash (its halves are not independent), only
// RedisBloom's.
func RedisBloomHash(item []byte) Hash {
	a := murmur64A(item, redisBloomSeed)
	return Hash{H1: a, H2: murmur64A(item, a)}
}

// murmur64A is MurmurHash64A (Austin Appleby's MurmurHash2, 64-bit
// variant for 64-bit platforms) of b with seed: 8-byte blocks read
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
