package bloom

import (
	"fmt"
	"unsafe"

	"github.com/dchest/siphash"
	"github.com/zeebo/xxh3"
)

// Hash is the 128-bit hash of an item, the input of AddHash and TestHash.
// Both halves must be uniformly distributed; the filter derives every bit
// position from them.
type Hash struct {
	H1, H2 uint64
}

// HashID names the hash function a filter applies to items. It is
// recorded in encoded filters so that a reader can refuse a mismatch.
type HashID uint8

const (
	// HashXXH3 is XXH3-128 (github.com/zeebo/xxh3) with seed 0; fast and
	// well distributed, but not keyed: an adversary who can choose items
	// can choose collisions.
	HashXXH3 HashID = 1
	// HashSipHash is SipHash-2-4 with 128-bit output under a secret
	// 128-bit key: for untrusted input. Select it with WithKey.
	HashSipHash HashID = 2
	// HashMurmur64A is RedisBloom's hash, the only hash of the RedisBloom
	// layout: H1 = MurmurHash64A(item, seed 0xc6a4a7935bd1e995) and
	// H2 = MurmurHash64A(item, seed H1) (RedisBloomHash). Not keyed.
	HashMurmur64A HashID = 3
	// HashMurmur2 is RedisBloom's older hash, of filters whose options
	// lack FORCE64 (RedisBloom made them before 64-bit hashing; a
	// RedisBloom-layout filter loaded from such a dump keeps it):
	// H1 = MurmurHash2(item, seed 0x9747b28c) and H2 = MurmurHash2(item,
	// seed H1), 32 bits each (RedisBloomHash32). Not keyed.
	HashMurmur2 HashID = 4
)

// String names the hash function.
func (h HashID) String() string {
	switch h {
	case HashXXH3:
		return "xxh3-128"
	case HashSipHash:
		return "siphash-2-4-128"
	case HashMurmur64A:
		return "murmur64a-pair"
	case HashMurmur2:
		return "murmur2-pair"
	}
	return fmt.Sprintf("hash(%d)", uint8(h))
}

// HashBytes is the unkeyed hash (HashXXH3) of b.
func HashBytes(b []byte) Hash {
	u := xxh3.Hash128(b)
	return Hash{H1: u.Lo, H2: u.Hi}
}

// HashString is the unkeyed hash (HashXXH3) of s.
func HashString(s string) Hash {
	u := xxh3.HashString128(s)
	return Hash{H1: u.Lo, H2: u.Hi}
}

// KeyedHash is SipHash-2-4-128 of b under key (HashSipHash).
func KeyedHash(key [16]byte, b []byte) Hash {
	k0, k1 := keyWords(key)
	h1, h2 := siphash.Hash128(k0, k1, b)
	return Hash{H1: h1, H2: h2}
}

// Hash64 expands a caller's 64-bit hash into the 128 bits the filter
// needs. Items with equal 64-bit hashes always collide, so a 64-bit hash
// sets a false-positive floor of about n/2^64; prefer 128-bit hashes.
func Hash64(h uint64) Hash {
	return Hash{H1: mix64(h), H2: mix64(h + golden)}
}

func keyWords(key [16]byte) (uint64, uint64) {
	var k0, k1 uint64
	for i := 7; i >= 0; i-- {
		k0 = k0<<8 | uint64(key[i])
		k1 = k1<<8 | uint64(key[8+i])
	}
	return k0, k1
}

// keyCheck is a 32-bit fingerprint of a key, stored in encoded keyed
// filters so that a reader given the wrong key gets an error, not a filter
// that silently answers wrongly. It reveals nothing useful about the key.
func keyCheck(k0, k1 uint64) uint32 {
	h, _ := siphash.Hash128(k0, k1, []byte("bloomery key check v1"))
	return uint32(h) | 1 // never 0, so 0 means "unkeyed"
}

// bytesOf views s as a byte slice without copying; the result is read-only.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

const golden = 0x9e3779b97f4a7c15

// mix64 is the MurmurHash3 finalizer: a bijection with full avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// probeWord returns the j-th extra 64-bit word of probe bits of h (j >= 1).
// Distinct j give distinct words for the same h, so probes never collapse
// onto one bit even when H2 is zero.
func probeWord(h Hash, j uint64) uint64 {
	return mix64(h.H2+j*golden) ^ h.H1
}

// KeyCheck is a 32-bit check value of key (never 0): encodings and
// Redis metadata store it so that opening a keyed filter with the wrong key
// fails, without storing the key.
func KeyCheck(key [16]byte) uint32 { return keyCheck(keyWords(key)) }

// KeyCheck is the check value of the filter's key (see the function
// KeyCheck), or 0 for an unkeyed filter.
func (f *Filter) KeyCheck() uint32 { return f.ext.check() }
