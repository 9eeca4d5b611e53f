package cuckoo

// Compaction, as RedisBloom's CuckooFilter_Compact (docs/CUCKOO.md §4):
// fingerprints move from newer sub-filters into older ones, and the
// newest sub-filters that end up empty are freed.

// Compact moves every fingerprint it can from each sub-filter but the
// first into an older one, newest first, and frees the newest
// sub-filters it empties, as CF.COMPACT does. A fingerprint in bucket b
// may go to bucket b or its alternate, reduced modulo the older
// sub-filter's size, so Test and Count answer as before for every item.
// It resets the deletes counter; the items do not change.
func (f *Filter) Compact() {
	if f.view != nil {
		defer f.lockView().unlock()
	}
	f.compact(true)
}

// compact is CuckooFilter_Compact: when cont is false it stops at the
// first sub-filter it cannot empty (Delete's automatic compaction).
func (f *Filter) compact(cont bool) {
	for k := len(f.subs) - 1; k >= 1; k-- {
		if !f.compactOne(k) && !cont {
			break
		}
	}
	f.deletes = 0
}

// compactOne moves what it can of sub-filter k into sub-filters 0..k−1
// and reports whether everything moved; then, if k is the newest, it
// frees it.
func (f *Filter) compactOne(k int) bool {
	s, bs := &f.subs[k], f.bucketSize
	all := true
	for b := range s.nb {
		for j := range bs {
			slot := &s.data[b*bs+j]
			if *slot == 0 {
				continue
			}
			if f.relocate(k, key{h1: b, h2: alt(*slot, b), fp: *slot}) {
				f.saving(s, b*bs+j, 1)
				*slot = 0
			} else {
				all = false
			}
		}
	}
	if all && k == len(f.subs)-1 {
		f.bytes -= uint64(len(s.data))
		f.subs[k] = subFilter{}
		f.subs = f.subs[:k]
	}
	return all
}

// relocate stores k's fingerprint in the first empty slot of its buckets
// in the oldest sub-filter before sub-filter n that has one, and reports
// whether it found one.
func (f *Filter) relocate(n int, k key) bool {
	for i := range n {
		if f.place(&f.subs[i], k) {
			return true
		}
	}
	return false
}
