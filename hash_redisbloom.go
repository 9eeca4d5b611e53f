package bloom

import "github.com/bloomery/bloom/internal/murmur"

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
	a := murmur.Hash64A(item, redisBloomSeed)
	return Hash{H1: a, H2: murmur.Hash64A(item, a)}
}

// redisBloomSeed32 is the seed of the first round of RedisBloomHash32.
const redisBloomSeed32 = 0x9747b28c

// RedisBloomHash32 is RedisBloom's 32-bit hash of item (HashMurmur2), of
// filters made without its FORCE64 option: H1 = MurmurHash2(item, seed
// 0x9747b28c), H2 = MurmurHash2(item, seed H1), each zero-extended to 64
// bits as RedisBloom keeps them.
func RedisBloomHash32(item []byte) Hash {
	a := murmur.Hash2(item, redisBloomSeed32)
	return Hash{H1: uint64(a), H2: uint64(murmur.Hash2(item, a))}
}
