package bloom

import "github.com/dchest/siphash"

// sipKey is a filter's SipHash-2-4 key as two words; nil means unkeyed
// (XXH3). Filter and Counting hash through it, so both have one notion of
// hash identity (Hash, HashID, Keyed, KeyCheck). Keyed filters share it by
// pointer with their clones and sub-filters: it never changes.
type sipKey struct{ k0, k1 uint64 }

// hash is the hash of item under k: SipHash-2-4-128 when keyed, else
// XXH3-128.
func (k *sipKey) hash(item []byte) Hash {
	if k != nil {
		return k.keyed(item)
	}
	return HashBytes(item)
}

//go:noinline
func (k *sipKey) keyed(item []byte) Hash {
	h1, h2 := siphash.Hash128(k.k0, k.k1, item)
	return Hash{H1: h1, H2: h2}
}

// id identifies the hash: HashSipHash when keyed, else HashXXH3.
func (k *sipKey) id() HashID {
	if k != nil {
		return HashSipHash
	}
	return HashXXH3
}

// check is the key's check value (KeyCheck), 0 when unkeyed.
func (k *sipKey) check() uint32 {
	if k == nil {
		return 0
	}
	return keyCheck(k.k0, k.k1)
}
