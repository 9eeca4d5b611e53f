package cuckoo

// Status is the outcome of one insert, numbered as CF.INSERT and
// CF.INSERTNX report it (RedisBloom's CuckooInsertStatus).
type Status int8

// The outcomes of an insert.
const (
	Inserted   Status = 1  // stored
	Exists     Status = 0  // AddUnique: the item tests present; nothing stored
	NoSpace    Status = -1 // no room and the filter does not grow: ErrFull
	GrowFailed Status = -2 // no room and growing failed: ErrTooLarge
)

// Err is the error of an outcome: nil for Inserted and Exists, ErrFull
// for NoSpace, ErrTooLarge for GrowFailed.
func (s Status) Err() error {
	switch s {
	case NoSpace:
		return ErrFull
	case GrowFailed:
		return ErrTooLarge
	}
	return nil
}

// AddHash stores the fingerprint of hash h, as CF.ADD does: in the first
// empty slot of its first bucket, else of its second, in the newest
// sub-filter that has one; else by kicking fingerprints to their other
// buckets in the newest sub-filter; else in a new sub-filter. A
// duplicate is stored again. It returns ErrFull when there is no room
// and the filter does not grow (expansion 0), ErrTooLarge when growing
// would pass the limits; the filter is unchanged then.
func (f *Filter) AddHash(h uint64) error { return f.insert(keyOf(h)).Err() }

// Add is AddHash of item's hash.
func (f *Filter) Add(item []byte) error { return f.AddHash(Hash(item)) }

// AddString is Add of the bytes of s.
func (f *Filter) AddString(s string) error { return f.AddHash(HashString(s)) }

// AddUniqueHash stores the fingerprint of hash h unless the item tests
// present, as CF.ADDNX does, and reports whether it stored it. An item
// that tests present by a false positive is not stored. Errors as
// AddHash.
func (f *Filter) AddUniqueHash(h uint64) (bool, error) {
	st := f.insertUnique(keyOf(h))
	return st == Inserted, st.Err()
}

// AddUnique is AddUniqueHash of item's hash.
func (f *Filter) AddUnique(item []byte) (bool, error) { return f.AddUniqueHash(Hash(item)) }

// AddUniqueString is AddUnique of the bytes of s.
func (f *Filter) AddUniqueString(s string) (bool, error) { return f.AddUniqueHash(HashString(s)) }

func (f *Filter) insertUnique(k key) Status {
	if f.present(k) {
		return Exists
	}
	return f.insert(k)
}

// insert is RedisBloom's CuckooFilter_InsertFP (add), with f's open
// view, if any, locked meanwhile (view.go).
func (f *Filter) insert(k key) Status {
	if f.view == nil {
		return f.add(k)
	}
	v := f.lockView()
	st := f.add(k)
	v.unlock()
	return st
}

// add is insert with the view, if any, locked.
func (f *Filter) add(k key) Status {
	for {
		for i := len(f.subs) - 1; i >= 0; i-- {
			if f.place(&f.subs[i], k) {
				f.items++
				return Inserted
			}
		}
		if f.kick(&f.subs[len(f.subs)-1], k) {
			f.items++
			return Inserted
		}
		if f.expansion == 0 {
			return NoSpace
		}
		if f.grow() != nil {
			return GrowFailed
		}
	}
}

// place stores k's fingerprint in the first empty slot of its first
// bucket in s, else of its second, and reports whether there was one.
func (f *Filter) place(s *subFilter, k key) bool {
	o1, o2 := f.offsets(s, k)
	j := f.first(s, o1, 0)
	if j < 0 {
		j = f.first(s, o2, 0)
	}
	if j < 0 {
		return false
	}
	f.saving(s, uint64(j), 1)
	s.data[j] = k.fp
	return true
}

// kick is RedisBloom's Filter_KOInsert: it carries k's fingerprint into
// its first bucket of s, swapping it with the slot victim, and moves the
// evicted fingerprint to its other bucket, up to maxIterations times;
// the victim slot advances each time. It reports whether an evicted
// fingerprint found an empty slot. If none did, it undoes every swap in
// reverse, so that s is as it was.
func (f *Filter) kick(s *subFilter, k key) bool {
	bs := f.bucketSize
	fp, c, victim := k.fp, s.index(k.h1), uint64(0)
	for range f.maxIterations {
		f.saving(s, c*bs+victim, 1)
		slot := &s.data[c*bs+victim]
		fp, *slot = *slot, fp
		c = s.index(alt(fp, c))
		if j := f.first(s, c*bs, 0); j >= 0 {
			f.saving(s, uint64(j), 1)
			s.data[j] = fp
			return true
		}
		victim = (victim + 1) % bs
	}
	for range f.maxIterations {
		victim = (victim + bs - 1) % bs
		c = s.index(alt(fp, c))
		f.saving(s, c*bs+victim, 1)
		slot := &s.data[c*bs+victim]
		fp, *slot = *slot, fp
	}
	return false
}
