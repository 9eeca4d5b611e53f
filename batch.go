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
// filters larger than the CPU caches: it hashes the items in batches and
// requests each batch's blocks while it tests the batch before, so that
// the blocks' cache misses overlap with each other and with the work.
func (f *Filter) TestMany(items [][]byte, dst []bool) []bool {
	dst = resize(dst, len(items))
	if f.mode == modeOther {
		for i, it := range items {
			dst[i] = f.TestHash(f.Hash(it))
		}
		return dst
	}
	var hs [2][batchSize]Hash
	var first [2][batchSize]uint64
	n := f.hashBatch(items, &hs[0])
	f.touch(hs[0][:n], &first[0])
	for off, b := 0, 0; off < len(items); off, b = off+n, b^1 {
		n = min(len(items)-off, batchSize)
		if next := items[off+n:]; len(next) > 0 {
			m := f.hashBatch(next, &hs[b^1])
			f.touch(hs[b^1][:m], &first[b^1])
		}
		f.testTouched(hs[b][:n], &first[b], dst[off:off+n])
	}
	return dst
}

// hashBatch hashes the first batchSize items (or all, if fewer) into hs
// and returns how many.
func (f *Filter) hashBatch(items [][]byte, hs *[batchSize]Hash) int {
	n := min(len(items), batchSize)
	for i, it := range items[:n] {
		hs[i] = f.Hash(it)
	}
	return n
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
	for len(hs) > 0 {
		n := min(len(hs), batchSize)
		f.touchAhead(hs[:n])
		for _, h := range hs[:n] {
			var isNew bool
			if asmAdd { // as in Add: written out, no call between
				isNew = addBlockAsm(f.block(h), h.H1, h.H2, f.k, &f.inserted)
			} else {
				isNew = f.addBlocked(h)
			}
			if isNew {
				added++
			}
		}
		hs = hs[n:]
	}
	return added
}

// touchAhead requests the blocks of a batch of at most batchSize hashes
// that are about to be added (touch), so that their cache misses overlap.
// The words read are stale once earlier items of the batch are set, so
// they cannot answer "new"; their XOR goes where the compiler cannot drop
// it, or it deletes the loads.
func (f *Filter) touchAhead(hs []Hash) {
	var first [batchSize]uint64
	f.touch(hs, &first)
	var x uint64
	for _, w := range first[:len(hs)] {
		x ^= w
	}
	sink(x)
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
		f.testTouched(hs[off:off+n], &first, dst[off:off+n])
	}
}

// testTouched tests a batch of at most batchSize hashes whose first
// probes' words touch loaded into first; out has len(hs) elements.
func (f *Filter) testTouched(hs []Hash, first *[batchSize]uint64, out []bool) {
	switch f.mode {
	case modeBlockedVec7:
		for i, h := range hs {
			out[i] = testBlockVec7(f.block(h), h.H2, f.k)
		}
		return
	case modeBlockedVec14:
		for i, h := range hs {
			out[i] = testBlockVec14(f.block(h), h.H1, h.H2, f.k)
		}
		return
	}
	if f.k <= fieldsPerWord {
		for i, h := range hs {
			// The first probe's word was loaded by touch.
			miss := uint64(1)<<(h.H2&63)&^first[i] | missing(f.block(h), h.H2>>9, f.k-1)
			out[i] = miss == 0
		}
		return
	}
	for i, h := range hs {
		// The first probe's word was loaded by touch.
		out[i] = uint64(1)<<(h.H2&63)&^first[i] == 0 && f.testBlocked(h)
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
