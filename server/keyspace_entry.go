package server

import (
	"unsafe"

	"github.com/bloomery/bloom/cuckoo"
)

// The values of the keyspace: a Bloom filter is an entry (16 bytes: the
// filter and the expiry), allocated with the filter, its bit array and
// its key when they are small (keyspace_value.go); a cuckoo filter is a
// cuckooEntry, an entry followed by the cuckoo filter, allocated as a
// whole and stored in the keyspace as its embedded entry, whose filter
// is nil. So a Bloom key
// costs what it did before cuckoo filters existed (issue 11's goal of
// INFO used_memory per key at most RedisBloom's left 7 bytes of room;
// an interface or a second pointer in entry would have taken 8 or 16),
// and a cuckoo key costs one pointer more. docs/DESIGN.md §8 ("Values")
// has the decision.

// cuckooEntry is a cuckoo filter's value. Its entry comes first, so the
// address of the entry is the address of the whole.
type cuckooEntry struct {
	entry // filter nil: the mark of a cuckooEntry
	cf    *cuckoo.Filter
}

// newCuckooEntry makes the keyspace value of f.
func newCuckooEntry(f *cuckoo.Filter) *entry {
	ce := &cuckooEntry{cf: f}
	return &ce.entry
}

// cuckoo returns the cuckoo filter of e, nil when e is a Bloom filter.
// The one place an entry is converted to the cuckooEntry holding it: an
// entry whose filter is nil is only ever made by newCuckooEntry, so the
// object really is a cuckooEntry (the conversion passes -race's
// checkptr).
func (e *entry) cuckoo() *cuckoo.Filter {
	if e.filter != nil {
		return nil
	}
	return (*cuckooEntry)(unsafe.Pointer(e)).cf
}

// bytes is the memory of e's filter that the budget counts: the bit
// arrays, or the cuckoo filter's buckets.
func (e *entry) bytes() uint64 {
	if e.filter != nil {
		return e.filter.Bytes()
	}
	return e.cuckoo().Bytes()
}

// Type names, as TYPE answers them for RedisBloom's values.
const (
	typeName       = "MBbloom--"
	typeNameCuckoo = "MBbloomCF"
)

// typeOf is what TYPE answers for e.
func (e *entry) typeOf() string {
	if e.filter != nil {
		return typeName
	}
	return typeNameCuckoo
}
