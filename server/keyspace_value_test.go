package server

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/bloomery/bloom"
)

// TestValueSizes: every value is exactly a size class of Go's
// allocator, so the tail fills what the object takes anyway, and the
// tails ascend (valueFor picks the first that fits).
func TestValueSizes(t *testing.T) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var classes []uint64
	for _, c := range ms.BySize {
		classes = append(classes, uint64(c.Size))
	}
	if valueHeader != 112 {
		t.Errorf("a value's header is %d bytes, want 112 (entry 16, bloom.Scalable 96)", valueHeader)
	}
	last := 0
	for _, va := range valueAllocs {
		e, tail := va.alloc()
		size := uint64(valueHeader) + 8*uint64(len(tail))
		if len(tail) != va.words || va.words <= last || !slices.Contains(classes, size) {
			t.Errorf("tail of %d words (listed %d, after %d): %d bytes is not a size class", len(tail), va.words, last, size)
		}
		if e.filter == nil || uintptr(unsafe.Pointer(&tail[0]))-uintptr(unsafe.Pointer(e)) != valueHeader {
			t.Errorf("tail of %d words: entry %p, tail %p, filter %p", va.words, e, &tail[0], e.filter)
		}
		last = va.words
	}
	for w := range valueFor {
		if got := valueAllocs[valueFor[w]].words; got < w || (valueFor[w] > 0 && valueAllocs[valueFor[w]-1].words >= w) {
			t.Errorf("valueFor[%d] has a tail of %d words", w, got)
		}
	}
}

// TestNewBloomEntry: a new filter's value holds the filter, its bit
// array and the key in one object when they fit and the layout allows
// it, else is allocated as before; either way it is an empty, working
// filter under the same key.
func TestNewBloomEntry(t *testing.T) {
	small := func(layout bloom.Layout) *bloom.ScalableMaker {
		m, err := bloom.NewScalableMaker(100, 0.01, bloom.WithGrowth(defaultCreate.growth()), bloom.WithLayout(layout))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	blocked, err := bloom.NewScalableMaker(10000, 0.01, bloom.WithGrowth(defaultCreate.growth()))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		m      *bloom.ScalableMaker
		key    string
		inline bool // one object; its size class
		size   uintptr
	}{
		{"default filter, short key", small(bloom.Blocked), "key:12345678", true, 288},
		{"default filter, 24-byte key", small(bloom.Blocked), strings.Repeat("k", 24), true, 288},
		{"default filter, 25-byte key", small(bloom.Blocked), strings.Repeat("k", 25), true, 320},
		{"default filter, empty key", small(bloom.Blocked), "", true, 288},
		{"RedisBloom layout", small(bloom.RedisBloom), "k", true, 0},
		{"key too long to fit", small(bloom.Blocked), strings.Repeat("k", 8*maxTailWords), false, 0},
		{"blocked bit array", blocked, "k", false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sv shardValues
			e, key := newBloomEntry(tc.m, tc.key, &sv)
			if key != tc.key || e.filter == nil || e.cuckoo() != nil || e.expireAt != 0 {
				t.Fatalf("key %q, filter %p, expiry %d", key, e.filter, e.expireAt)
			}
			if e.filter.Count() != 0 || e.bytes() != tc.m.FirstSizing().Bytes() {
				t.Fatalf("count %d, bytes %d, want 0 and %d", e.filter.Count(), e.bytes(), tc.m.FirstSizing().Bytes())
			}
			start := uintptr(unsafe.Pointer(e))
			within := func(p unsafe.Pointer) bool {
				return uintptr(p) >= start && uintptr(p) < start+valueHeader+8*maxTailWords
			}
			if len(key) > 0 && within(unsafe.Pointer(unsafe.StringData(key))) != tc.inline {
				t.Errorf("key in the value: %v, want %v", !tc.inline, tc.inline)
			}
			if within(unsafe.Pointer(e.filter)) != tc.inline {
				t.Errorf("filter in the value: %v, want %v", !tc.inline, tc.inline)
			}
			if tc.size != 0 {
				need := tc.m.Words() + (len(tc.key)+7)/8
				if got := valueHeader + 8*uintptr(valueAllocs[valueFor[need]].words); got != tc.size {
					t.Errorf("value of %d bytes, want %d", got, tc.size)
				}
			}
			for i := range 300 { // past the first sub-filter: it grows
				if _, err := e.filter.AddString(strings.Repeat("x", i)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 300 {
				if !e.filter.TestString(strings.Repeat("x", i)) {
					t.Fatalf("item %d: a false negative", i)
				}
			}
			if key != tc.key {
				t.Fatalf("the key changed to %q", key)
			}
		})
	}
}

// TestNewBloomEntryAllocs: BF.ADD's new filter is one allocation (and a
// batch of them every valueBatch).
func TestNewBloomEntryAllocs(t *testing.T) {
	m, err := bloom.NewScalableMaker(100, 0.01, bloom.WithGrowth(defaultCreate.growth()))
	if err != nil {
		t.Fatal(err)
	}
	var sv shardValues
	if n := testing.AllocsPerRun(10*valueBatch, func() { newBloomEntry(m, "key:12345678", &sv) }); n != 1 {
		t.Fatalf("%v allocations, want 1", n)
	}
}

// TestShardValuesTake: take hands out each value of a batch once, zero
// but for the entry's filter, allocating a batch only when one is used
// up, and keeps a batch per size.
func TestShardValuesTake(t *testing.T) {
	var sv shardValues
	seen := map[*entry]bool{}
	for i := range 3*valueBatch + 1 {
		for _, size := range []int{0, 7, len(valueAllocs) - 1} {
			e, tail := sv.take(size)
			if seen[e] || e.filter == nil || e.filter.NumFilters() != 0 || e.expireAt != 0 || len(tail) != valueAllocs[size].words {
				t.Fatalf("take %d of size %d: seen %v, filter %p, tail %d words", i, size, seen[e], e.filter, len(tail))
			}
			if slices.ContainsFunc(tail, func(w uint64) bool { return w != 0 }) {
				t.Fatalf("take %d of size %d: the tail is not zero", i, size)
			}
			seen[e] = true
			if b := sv[size]; b.next != i%valueBatch+1 || b.vals[b.next-1].e != nil {
				t.Fatalf("take %d of size %d: batch at %d, taken value still held", i, size, b.next)
			}
		}
	}
	for size, b := range sv {
		if (b != nil) != (size == 0 || size == 7 || size == len(valueAllocs)-1) {
			t.Errorf("size %d: batch %p", size, b)
		}
	}
}

// TestRestoredKeysInValues: a key loaded from a snapshot as its shape's
// state is one object, its filter, bits and key in a value, where BF.ADD
// would have made it so; it works, grows and is written again as before.
func TestRestoredKeysInValues(t *testing.T) {
	m, p := openTestPersistence(t, t.TempDir(), "everysec")
	defer p.close()
	ctx := context.Background()
	keys := map[string]bool{ // in a value after the load
		"short": true, strings.Repeat("k", 40): true, strings.Repeat("k", 8*maxTailWords): false,
	}
	for k := range keys {
		mustAdd(t, m, k, nItems(k, 5)...)
	}
	if err := m.Reserve(ctx, "blocked", createOpts{rate: 0.01, capacity: 10000, expansion: 2}); err != nil {
		t.Fatal(err)
	}
	keys["blocked"] = false
	mustAdd(t, m, "blocked", nItems("blocked", 5)...)
	if _, err := m.PExpireAt(ctx, "short", compatExpiry, expireAlways); err != nil {
		t.Fatal(err)
	}
	want := storeState(m)
	if err := p.save(); err != nil {
		t.Fatal(err)
	}
	r := bareStore(t, p.dir, p.snapGen.Load())
	if got := storeState(r); got != want {
		t.Fatalf("loaded\n%s\nwant\n%s", got, want)
	}
	_, stored := r.ks.scan(0, 1<<30, func(string) bool { return true })
	for _, k := range stored {
		e := r.ks.peek(k)
		start := uintptr(unsafe.Pointer(e))
		within := func(p unsafe.Pointer) bool {
			return uintptr(p) >= start && uintptr(p) < start+valueHeader+8*maxTailWords
		}
		inline := keys[k]
		if within(unsafe.Pointer(unsafe.StringData(k))) != inline || within(unsafe.Pointer(e.filter)) != inline {
			t.Errorf("key %.12q: key in the value %v, filter %v; want %v", k,
				within(unsafe.Pointer(unsafe.StringData(k))), within(unsafe.Pointer(e.filter)), inline)
		}
		for _, it := range nItems(k, 5) {
			if !e.filter.TestString(it) {
				t.Fatalf("key %.12q: a false negative for %q", k, it)
			}
		}
	}
	before := r.used.Load()
	mustAdd(t, r, "short", nItems("more", 300)...) // grows past its value
	if r.used.Load() <= before {
		t.Fatalf("growth not charged: %d bytes before, %d after", before, r.used.Load())
	}
	for _, it := range append(nItems("short", 5), nItems("more", 300)...) {
		if !r.ks.peek("short").filter.TestString(it) {
			t.Fatalf("a false negative for %q after growth", it)
		}
	}
}
