package cuckoo

// The operations on one item, as RedisBloom's cuckoo.c does them
// (docs/CUCKOO.md §3–4): an item hash h gives a fingerprint fp in 1..255
// and two bucket hashes, h1 = h and h2 = h XOR fp·0x5bd1e995; each is
// reduced modulo a sub-filter's bucket count.

// altMul is the multiplier of the alternate bucket.
const altMul = 0x5bd1e995

// key is an item's fingerprint and bucket hashes.
type key struct {
	h1, h2 uint64
	fp     byte
}

// keyOf is the key of hash h.
func keyOf(h uint64) key {
	fp := byte(h%255 + 1)
	return key{h1: h, h2: h ^ uint64(fp)*altMul, fp: fp}
}

// alt is the other bucket hash of fingerprint fp in bucket (hash) i.
func alt(fp byte, i uint64) uint64 { return i ^ uint64(fp)*altMul }

// offsets are the offsets of k's two buckets in s.
func (f *Filter) offsets(s *subFilter, k key) (o1, o2 uint64) {
	return s.index(k.h1) * f.bucketSize, s.index(k.h2) * f.bucketSize
}

// TestHash reports whether an item of hash h may be in the filter: its
// fingerprint is in one of its buckets in some sub-filter. It may return
// a false positive; never a false negative for an item added and not
// deleted (as CF.EXISTS).
func (f *Filter) TestHash(h uint64) bool {
	return f.present(keyOf(h))
}

// present is TestHash of k.
func (f *Filter) present(k key) bool {
	if len(f.subs) == 1 && f.slots != 0 { // the common case, without the loop
		s := &f.subs[0]
		o1, o2 := f.offsets(s, k)
		return f.matches(s, o1, k.fp)|f.matches(s, o2, k.fp) != 0
	}
	for i := range f.subs {
		s := &f.subs[i]
		o1, o2 := f.offsets(s, k)
		if f.slots != 0 { // both words read before either is tested, so their cache misses overlap
			if f.matches(s, o1, k.fp)|f.matches(s, o2, k.fp) != 0 {
				return true
			}
		} else if f.has(s, o1, k.fp) || f.has(s, o2, k.fp) {
			return true
		}
	}
	return false
}

// Test reports whether item may be in the filter (see TestHash).
func (f *Filter) Test(item []byte) bool { return f.TestHash(Hash(item)) }

// TestString is Test of the bytes of s.
func (f *Filter) TestString(s string) bool { return f.TestHash(HashString(s)) }

// CountHash counts the copies of the fingerprint of hash h in its
// buckets, over all sub-filters, as CF.COUNT does: the copies added and
// not deleted, plus other items' colliding fingerprints; when the two
// buckets are the same bucket it is counted twice.
func (f *Filter) CountHash(h uint64) uint64 {
	k := keyOf(h)
	n := uint64(0)
	for i := range f.subs {
		s := &f.subs[i]
		o1, o2 := f.offsets(s, k)
		n += f.count(s, o1, k.fp) + f.count(s, o2, k.fp)
	}
	return n
}

// Count is CountHash of item's hash.
func (f *Filter) Count(item []byte) uint64 { return f.CountHash(Hash(item)) }

// CountString is Count of the bytes of s.
func (f *Filter) CountString(s string) uint64 { return f.CountHash(HashString(s)) }

// DeleteHash removes one copy of the fingerprint of hash h, searching the
// sub-filters newest first and in each the first bucket, then the
// second, and reports whether it found one (as CF.DEL). The copy removed
// may be another item's with the same fingerprint and buckets: delete
// only items that were added. A delete may compact the filter (Compact)
// when it has more than one sub-filter and the deletes since the last
// compaction exceed 10% of the items.
func (f *Filter) DeleteHash(h uint64) bool {
	if f.view == nil {
		return f.delete(keyOf(h))
	}
	v := f.lockView()
	ok := f.delete(keyOf(h))
	v.unlock()
	return ok
}

// delete is DeleteHash of k, with the view, if any, locked.
func (f *Filter) delete(k key) bool {
	for i := len(f.subs) - 1; i >= 0; i-- {
		s := &f.subs[i]
		o1, o2 := f.offsets(s, k)
		j := f.first(s, o1, k.fp)
		if j < 0 {
			j = f.first(s, o2, k.fp)
		}
		if j < 0 {
			continue
		}
		f.saving(s, uint64(j), 1)
		s.data[j] = 0
		f.items--
		f.deletes++
		if len(f.subs) > 1 && float64(f.deletes) > float64(f.items)*0.10 {
			f.compact(false)
		}
		return true
	}
	return false
}

// Delete is DeleteHash of item's hash.
func (f *Filter) Delete(item []byte) bool { return f.DeleteHash(Hash(item)) }

// DeleteString is Delete of the bytes of s.
func (f *Filter) DeleteString(s string) bool { return f.DeleteHash(HashString(s)) }
