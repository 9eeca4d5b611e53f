package cuckoo

import "github.com/bloomery/bloom/internal/murmur"

// Hash is the hash RedisBloom's cuckoo filters give item: MurmurHash64A
// (the 64-bit MurmurHash2 for 64-bit platforms) with seed 0. The *Hash
// methods take it, so that an item hashed once can be tested and added
// without hashing it again.
func Hash(item []byte) uint64 { return murmur.Hash64A(item, 0) }

// HashString is Hash of the bytes of s, without copying them.
func HashString(s string) uint64 { return murmur.Hash64A(bytesOf(s), 0) }
