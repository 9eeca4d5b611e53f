package bloom

// batchSize is how many items a batch hashes before touching memory.
// Their first cache lines are then requested back to back, so that many
// cache misses are in flight at once instead of one at a time.
const batchSize = 32

// AddMany adds every item and returns how many were new (see Add).
func (f *Filter) AddMany(items [][]byte) int {
	var hs [batchSize]Hash
	added := 0
	for len(items) > 0 {
		n := min(len(items), batchSize)
		for i, it := range items[:n] {
			hs[i] = f.Hash(it)
		}
		added += f.AddHashes(hs[:n])
		items = items[n:]
	}
	return added
}

// TestMany tests every item and returns the results in dst, resized to
// len(items) (a nil dst is allocated). It is faster per item than Test on
// filters larger than the CPU caches.
func (f *Filter) TestMany(items [][]byte, dst []bool) []bool {
	dst = resize(dst, len(items))
	var hs [batchSize]Hash
	for off := 0; off < len(items); off += batchSize {
		n := min(len(items)-off, batchSize)
		for i, it := range items[off : off+n] {
			hs[i] = f.Hash(it)
		}
		f.TestHashes(hs[:n], dst[off:off+n])
	}
	return dst
}

// AddHashes adds items by their hashes and returns how many were new.
func (f *Filter) AddHashes(hs []Hash) int {
	added := 0
	if f.mode == modeOther {
		for _, h := range hs {
			if f.AddHash(h) {
				added++
			}
		}
		return added
	}
	var first [batchSize]uint64
	for len(hs) > 0 {
		n := min(len(hs), batchSize)
		f.touch(hs[:n], &first)
		// The touched words are stale once earlier items of the batch
		// are set, so they cannot answer "new"; store their XOR where
		// the compiler cannot drop it, or it deletes the loads.
		var x uint64
		for _, w := range first[:n] {
			x ^= w
		}
		sink(x)
		for _, h := range hs[:n] {
			if f.addBlocked(h) {
				added++
			}
		}
		hs = hs[n:]
	}
	return added
}

// TestHashes tests items by their hashes; dst must have len(hs) elements.
func (f *Filter) TestHashes(hs []Hash, dst []bool) {
	dst = dst[:len(hs)] // one bounds check, and a clear panic on misuse
	if f.mode == modeOther {
		for i, h := range hs {
			dst[i] = f.TestHash(h)
		}
		return
	}
	var first [batchSize]uint64
	for off := 0; off < len(hs); off += batchSize {
		n := min(len(hs)-off, batchSize)
		f.touch(hs[off:off+n], &first)
		out := dst[off : off+n]
		switch f.mode {
		case modeBlockedVec7:
			for i, h := range hs[off : off+n] {
				out[i] = testBlockVec7(f.block(h), h.H2, f.k)
			}
			continue
		case modeBlockedVec14:
			for i, h := range hs[off : off+n] {
				out[i] = testBlockVec14(f.block(h), h.H1, h.H2, f.k)
			}
			continue
		}
		if f.k <= fieldsPerWord {
			for i, h := range hs[off : off+n] {
				// The first probe's word was loaded by touch.
				miss := uint64(1)<<(h.H2&63)&^first[i] | missing(f.block(h), h.H2>>9, f.k-1)
				out[i] = miss == 0
			}
			continue
		}
		for i, h := range hs[off : off+n] {
			// The first probe's word was loaded by touch.
			out[i] = uint64(1)<<(h.H2&63)&^first[i] == 0 && f.testBlocked(h)
		}
	}
}

// touch loads, for each hash, the word of its first probe: independent
// loads the CPU can keep in flight together. Keeping the values (rather
// than discarding them) stops the compiler from removing the loads.
func (f *Filter) touch(hs []Hash, first *[batchSize]uint64) {
	for i, h := range hs {
		first[i] = f.words()[mulhi(h.H1, f.blocks())*8+(h.H2&511)>>6]
	}
}

func resize(dst []bool, n int) []bool {
	if cap(dst) < n {
		return make([]bool, n)
	}
	return dst[:n]
}

// sink keeps x (and the loads it came from) alive: the compiler cannot
// drop the argument of a call it does not inline.
//
//go:noinline
func sink(x uint64) { _ = x }
