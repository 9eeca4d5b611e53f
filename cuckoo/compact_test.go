package cuckoo

import (
	"fmt"
	"testing"
)

// grown is a filter of RedisBloom's defaults for 64 items, filled with
// n, and the items.
func grown(t *testing.T, n int) (*Filter, []string) {
	f := mustNew(t, 64)
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprint("c", i)
		if err := f.AddString(items[i]); err != nil {
			t.Fatal(err)
		}
	}
	return f, items
}

// Deleting past 10% of the items compacts a grown filter: it frees the
// newest sub-filters it empties, resets the deletes, keeps the items,
// and every item left still tests present.
func TestDeleteCompacts(t *testing.T) {
	f, items := grown(t, 400)
	filters := f.Filters()
	if filters < 3 {
		t.Fatalf("%d sub-filters: the test needs a grown filter", filters)
	}
	deleted := 0
	for f.Filters() == filters {
		if !f.DeleteString(items[deleted]) {
			t.Fatalf("Delete of %s found nothing", items[deleted])
		}
		deleted++
	}
	if in := f.Info(); in.Deleted != 0 || in.Items != uint64(len(items)-deleted) {
		t.Errorf("after the compaction: %+v, want no deletes and %d items", in, len(items)-deleted)
	}
	if want := len(items) / 11; deleted < want {
		t.Errorf("compacted after %d deletes of %d items: before 10%%", deleted, len(items))
	}
	for _, it := range items[deleted:] {
		if !f.TestString(it) {
			t.Fatalf("%s tests absent after the compaction", it)
		}
	}
}

// Compact moves what it can to older sub-filters, whatever the deletes,
// and frees the newest it empties; on a filter with one sub-filter it
// only resets the deletes.
func TestCompact(t *testing.T) {
	f := mustLoadHeader(t, dumpHeaderBytes(1, 4, 3, 2, 2, 20, 1)) // 2 sub-filters of 4 buckets
	k := keyOf(HashString("a"))
	chunk := make([]byte, 8)
	chunk[2*(k.h1%4)] = k.fp
	if err := f.LoadChunk(17, chunk); err != nil { // sub-filter 1
		t.Fatal(err)
	}
	if !f.TestString("a") {
		t.Fatal("the fingerprint written is not a's")
	}
	f.Compact()
	if in := f.Info(); in.Filters != 1 || in.Items != 1 || in.Deleted != 0 || !f.TestString("a") {
		t.Errorf("after Compact: %+v, Test(a) %v; want 1 sub-filter holding a", in, f.TestString("a"))
	}
	g := mustNew(t, 64)
	g.AddString("x")
	g.DeleteString("x")
	g.Compact()
	if in := g.Info(); in.Deleted != 0 || in.Filters != 1 {
		t.Errorf("Compact of one sub-filter: %+v", in)
	}
}

// A fingerprint whose two buckets are one bucket counts twice, as in
// RedisBloom.
func TestCountSameBucketTwice(t *testing.T) {
	f := mustNew(t, 4) // 2 buckets: the buckets coincide for even fingerprints
	for i := 0; ; i++ {
		item := fmt.Sprint(i)
		if keyOf(HashString(item)).fp%2 != 0 {
			continue
		}
		f.AddString(item)
		if n := f.CountString(item); n != 2 {
			t.Fatalf("one copy of %s counts %d, want 2", item, n)
		}
		return
	}
}
