package server

import (
	"testing"
	"unsafe"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/cuckoo"
)

// TestEntrySize: a Bloom key's value stays 16 bytes (the filter and the
// expiry); cuckoo filters must not widen it (keyspace_entry.go).
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 16 {
		t.Fatalf("entry is %d bytes, want 16", n)
	}
	if n := unsafe.Sizeof(cuckooEntry{}); n != 24 {
		t.Fatalf("cuckooEntry is %d bytes, want 24", n)
	}
}

// TestEntryKinds: each entry says what it holds, through the one
// accessor.
func TestEntryKinds(t *testing.T) {
	bf, err := bloom.NewScalable(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := cuckoo.New(1000)
	if err != nil {
		t.Fatal(err)
	}
	b, c := &entry{filter: bf}, newCuckooEntry(cf)
	if b.cuckoo() != nil || b.typeOf() != "MBbloom--" || b.bytes() != bf.Bytes() {
		t.Errorf("bloom entry: cuckoo %v, type %s, bytes %d", b.cuckoo(), b.typeOf(), b.bytes())
	}
	if c.cuckoo() != cf || c.filter != nil || c.typeOf() != "MBbloomCF" || c.bytes() != 1024 {
		t.Errorf("cuckoo entry: cuckoo %p (want %p), type %s, bytes %d", c.cuckoo(), cf, c.typeOf(), c.bytes())
	}
	c.expireAt = 42
	if (*cuckooEntry)(unsafe.Pointer(c)).expireAt != 42 {
		t.Error("the entry is not the cuckooEntry's own")
	}
}
