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
