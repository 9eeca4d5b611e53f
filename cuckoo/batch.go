package cuckoo

// batchSize is how many items a batch hashes before it reads buckets, so
// that the buckets' cache misses overlap instead of coming one by one.
const batchSize = 32

// AddMany adds every item, as CF.INSERT does, and returns each one's
// outcome in dst, resized to len(items) (a nil dst is allocated): a
// failed item does not stop the others.
func (f *Filter) AddMany(items [][]byte, dst []Status) []Status {
	dst = resize(dst, len(items))
	f.addMany(items, dst, false)
	return dst
}

// AddUniqueMany adds every item that does not test present, as
// CF.INSERTNX does (an item sees the ones before it in items), and
// returns each one's outcome in dst, resized as for AddMany.
func (f *Filter) AddUniqueMany(items [][]byte, dst []Status) []Status {
	dst = resize(dst, len(items))
	f.addMany(items, dst, true)
	return dst
}

// addMany adds items in order into dst (len(items) long), each as insert
// (or insertUnique) would one after the other. It hashes them in batches
// and reads each batch's buckets in the newest sub-filter first (touch),
// so that their cache misses overlap instead of coming one per item; the
// reads change nothing, so the outcome is the same.
func (f *Filter) addMany(items [][]byte, dst []Status, unique bool) {
	var hs [batchSize]uint64
	for off := 0; off < len(items); off += batchSize {
		batch := items[off:min(off+batchSize, len(items))]
		for i, it := range batch {
			hs[i] = Hash(it)
		}
		if len(items) > 1 { // one item (CF.ADD): nothing to overlap
			f.touch(hs[:len(batch)])
		}
		for i := range batch {
			if unique {
				dst[off+i] = f.insertUnique(keyOf(hs[i]))
			} else {
				dst[off+i] = f.insert(keyOf(hs[i]))
			}
		}
	}
}

// TestMany tests every item, as CF.MEXISTS does, and returns the results
// in dst, resized to len(items) (a nil dst is allocated). It hashes the
// items in batches before reading their buckets.
func (f *Filter) TestMany(items [][]byte, dst []bool) []bool {
	dst = resize(dst, len(items))
	if len(items) == 1 { // CF.EXISTS: nothing to overlap
		dst[0] = f.TestHash(Hash(items[0]))
		return dst
	}
	var hs [batchSize]uint64
	for off := 0; off < len(items); off += batchSize {
		batch := items[off:min(off+batchSize, len(items))]
		for i, it := range batch {
			hs[i] = Hash(it)
		}
		f.touch(hs[:len(batch)])
		for i := range batch {
			dst[off+i] = f.TestHash(hs[i])
		}
	}
	return dst
}

// resize returns dst with length n, reusing its memory when it can.
func resize[T any](dst []T, n int) []T {
	if cap(dst) < n {
		return make([]T, n)
	}
	return dst[:n]
}

// touch reads the words of both buckets of each hash in the newest
// sub-filter: independent loads the CPU keeps in flight together, so
// that the tests after it find them in the cache.
func (f *Filter) touch(hs []uint64) {
	if f.slots == 0 || len(f.subs) == 0 {
		return
	}
	s := &f.subs[len(f.subs)-1]
	var x uint64
	for _, h := range hs {
		o1, o2 := f.offsets(s, keyOf(h))
		x ^= f.word(s, o1) ^ f.word(s, o2)
	}
	keep(x)
}

// keep keeps x, and the loads it came from, alive: the compiler cannot
// drop the argument of a call it does not inline.
//
//go:noinline
func keep(x uint64) { _ = x }
