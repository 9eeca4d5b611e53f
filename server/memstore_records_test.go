package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/cuckoo"
)

// TestAddRecords: an add that stores one item in a filter that existed
// is journaled as BF.ADD or CF.ADD (shorter than the INSERT forms);
// replaying the journal makes the same filters, bit for bit, and a short
// add replayed on a missing key makes nothing (NOCREATE).
func TestAddRecords(t *testing.T) {
	ctx := context.Background()
	items := func(s ...string) [][]byte {
		b := make([][]byte, len(s))
		for i, x := range s {
			b[i] = []byte(x)
		}
		return b
	}
	bigCuckoo := defaultCuckoo
	bigCuckoo.capacity = 5000
	steps := []struct {
		do   func(m *memstore) error
		want string // journaled, "" for nothing
	}{
		// Bloom: made by BF.ADD's defaults, an existing filter, an item
		// already there, two new items, options of its own.
		{func(m *memstore) error { return bfAdd(ctx, m, "b", items("a"), &defaultCreate) }, "BF.INSERT b ITEMS a"},
		{func(m *memstore) error { return bfAdd(ctx, m, "b", items("x"), nil) }, "BF.ADD b x"},
		{func(m *memstore) error { return bfAdd(ctx, m, "b", items("x"), nil) }, ""},
		{func(m *memstore) error { return bfAdd(ctx, m, "b", items("x", "y", "z"), nil) }, "BF.INSERT b NOCREATE ITEMS y z"},
		{func(m *memstore) error {
			return bfAdd(ctx, m, "b2", items("a"), &createOpts{rate: 0.001, capacity: 100, expansion: 2})
		}, "BF.INSERT b2 CAPACITY 100 ERROR 0.001 EXPANSION 2 ITEMS a"},
		// Cuckoo: the same cases, CF.ADDNX's item already there, and a
		// filter made by CF.INSERT CAPACITY.
		{func(m *memstore) error { return cfAdd(ctx, m, "c", items("a"), cuckooAdd{create: &defaultCuckoo}) }, "CF.INSERT c CAPACITY 1024 ITEMS a"},
		{func(m *memstore) error { return cfAdd(ctx, m, "c", items("a"), cuckooAdd{create: &defaultCuckoo}) }, "CF.ADD c a"},
		{func(m *memstore) error {
			return cfAdd(ctx, m, "c", items("a"), cuckooAdd{nx: true, create: &defaultCuckoo})
		}, ""},
		{func(m *memstore) error { return cfAdd(ctx, m, "c", items("a", "b"), cuckooAdd{nx: true}) }, "CF.ADD c b"},
		{func(m *memstore) error { return cfAdd(ctx, m, "c", items("p", "q"), cuckooAdd{}) }, "CF.INSERT c NOCREATE ITEMS p q"},
		{func(m *memstore) error { return cfAdd(ctx, m, "c2", items("a"), cuckooAdd{create: &bigCuckoo}) }, "CF.INSERT c2 CAPACITY 5000 ITEMS a"},
	}
	m := newMemstore(0, 0)
	j := &captureJournal{}
	m.journal = j
	var want []string
	for i, st := range steps {
		before := len(j.cmds)
		if err := st.do(m); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got := ""
		for _, c := range j.cmds[before:] {
			got += joinWords(c)
		}
		if got != st.want {
			t.Fatalf("step %d journaled %q, want %q", i, got, st.want)
		}
		if got != "" {
			want = append(want, got)
		}
	}
	loaded := newLoadingMemstore(0)
	r := newReplayer(loaded, testCommands())
	for _, c := range j.cmds {
		if err := r.apply(c); err != nil {
			t.Fatalf("replay %q: %v", joinWords(c), err)
		}
	}
	for _, rec := range []string{"BF.ADD gone x", "CF.ADD gone x"} {
		if err := r.apply(items(strings.Fields(rec)...)); err != nil {
			t.Fatalf("replay %q: %v", rec, err)
		}
	}
	loaded.serve(0, bloom.Blocked, time.Now)
	if n, _ := loaded.CountExisting(ctx, []string{"gone"}); n != 0 {
		t.Error("a short add replayed on a missing key made a filter")
	}
	for _, k := range []string{"b", "b2"} {
		if got, want := dumpOf(t, loaded, k), dumpOf(t, m, k); got != want {
			t.Errorf("replayed filter %s differs: %d bytes, want %d", k, len(got), len(want))
		}
	}
	for _, k := range []string{"c", "c2"} {
		if got, want := cuckooDumpOf(t, loaded, k), cuckooDumpOf(t, m, k); got != want {
			t.Errorf("replayed cuckoo filter %s differs: %d bytes, want %d", k, len(got), len(want))
		}
	}
}

func bfAdd(ctx context.Context, m *memstore, key string, items [][]byte, create *createOpts) error {
	_, err := m.Add(ctx, key, items, create, make([]addResult, len(items)))
	return err
}

func cfAdd(ctx context.Context, m *memstore, key string, items [][]byte, a cuckooAdd) error {
	return memCuckoo{m}.Add(ctx, key, items, a, make([]cuckoo.Status, len(items)))
}

// cuckooDumpOf is key's cuckoo filter as CF.SCANDUMP gives it.
func cuckooDumpOf(t *testing.T, m *memstore, key string) string {
	t.Helper()
	var b []byte
	for it := int64(0); ; {
		next, chunk, err := memCuckoo{m}.ScanDump(context.Background(), key, it)
		if err != nil {
			t.Fatal(err)
		}
		if next == 0 {
			return string(b)
		}
		b = append(append(b, chunk...), '|')
		it = next
	}
}
