package bloom

import "github.com/dchest/siphash"

// filterExt is what only some filters have, so that the others pay one
// nil pointer for it: the SipHash-2-4 key of a keyed filter
// (HashSipHash), or the bits per entry of a RedisBloom-layout filter
// (HashMurmur64A), as RedisBloom records it. nil means an unkeyed XXH3
// filter. Filter and Counting hash through it, so both have one notion of
// hash identity (Hash, HashID, Keyed, KeyCheck). It never changes: keyed
// filters share theirs by pointer with their clones and sub-filters, a
// RedisBloom-layout sub-filter has its own (its bits per entry).
type filterExt struct {
	id     HashID  // HashSipHash, or HashMurmur64A or HashMurmur2 (the RedisBloom layout)
	k0, k1 uint64  // the SipHash key (HashSipHash)
	bpe    float64 // bits per entry (the RedisBloom layout)
	// n2, when not 0, makes the probes of a RedisBloom-layout filter
	// land in the first 2^n2 bits (RedisBloom's power-of-two sizing),
	// not in all of them.
	n2 uint8
}

// hash is the hash of item under e: XXH3-128 when e is nil.
func (e *filterExt) hash(item []byte) Hash {
	if e != nil {
		return e.hashOther(item)
	}
	return HashBytes(item)
}

// hashOther is the hash of item under a non-nil e: SipHash-2-4-128 under
// its key, or RedisBloom's MurmurHash64A pair.
//
//go:noinline
func (e *filterExt) hashOther(item []byte) Hash {
	switch e.id {
	case HashMurmur64A:
		return RedisBloomHash(item)
	case HashMurmur2:
		return RedisBloomHash32(item)
	}
	h1, h2 := siphash.Hash128(e.k0, e.k1, item)
	return Hash{H1: h1, H2: h2}
}

// hashID identifies the hash: HashXXH3 when e is nil.
func (e *filterExt) hashID() HashID {
	if e != nil {
		return e.id
	}
	return HashXXH3
}

// keyed reports whether e holds a SipHash key.
func (e *filterExt) keyed() bool { return e != nil && e.id == HashSipHash }

// check is the key's check value (KeyCheck), 0 when unkeyed.
func (e *filterExt) check() uint32 {
	if !e.keyed() {
		return 0
	}
	return keyCheck(e.k0, e.k1)
}

// bitsPerEntry is the RedisBloom layout's bits per entry, 0 for the
// other layouts.
func (e *filterExt) bitsPerEntry() float64 {
	if e.redisBloom() {
		return e.bpe
	}
	return 0
}

// redisBloom reports whether e is a RedisBloom-layout filter's.
func (e *filterExt) redisBloom() bool {
	return e != nil && (e.id == HashMurmur64A || e.id == HashMurmur2)
}

// probeBits is the number of bits the probes of a RedisBloom-layout
// filter of m bits land in: 2^n2 when n2 is set, else m.
func (e *filterExt) probeBits(m uint64) uint64 {
	if e != nil && e.n2 != 0 {
		return 1 << e.n2
	}
	return m
}
