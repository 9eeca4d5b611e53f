package cuckoo

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// mustNew is New that fails the test on an error.
func mustNew(t testing.TB, capacity uint64, opts ...Option) *Filter {
	t.Helper()
	f, err := New(capacity, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// New sizes and rounds as CF.RESERVE does (docs/CUCKOO.md §2; observed on
// RedisBloom 2.8.20).
func TestNewGeometryMatchesRedisBloom(t *testing.T) {
	tests := []struct {
		capacity, bucketSize, expansion uint64
		buckets, storedExpansion        uint64
	}{
		{4, 2, 1, 2, 1},
		{5, 2, 1, 2, 1},
		{1000, 2, 1, 512, 1},
		{1024, 2, 1, 512, 1},
		{1025, 2, 1, 512, 1},
		{1026, 2, 1, 1024, 1},
		{13, 6, 1, 2, 1},
		{1000, 255, 1, 4, 1},
		{100, 2, 0, 64, 0},
		{100, 2, 3, 64, 4},
		{100, 2, 5, 64, 8},
		{100, 2, 1000, 64, 1024},
		{100, 2, 32767, 64, 32768},
		{100, 2, 32768, 64, 32768},
	}
	for _, tt := range tests {
		f := mustNew(t, tt.capacity, WithBucketSize(tt.bucketSize), WithExpansion(tt.expansion))
		in := f.Info()
		want := Info{
			Size: 40 + 16 + tt.buckets*tt.bucketSize, Buckets: tt.buckets, Filters: 1,
			BucketSize: tt.bucketSize, Expansion: tt.storedExpansion, MaxIterations: DefaultMaxIterations,
		}
		if in != want {
			t.Errorf("New(%d, bucket size %d, expansion %d): %+v, want %+v", tt.capacity, tt.bucketSize, tt.expansion, in, want)
		}
		if f.Bytes() != tt.buckets*tt.bucketSize || f.EncodedSize() != int64(136+f.Bytes()) {
			t.Errorf("New(%d): Bytes %d EncodedSize %d", tt.capacity, f.Bytes(), f.EncodedSize())
		}
	}
}

// New refuses parameters out of range, and filters beyond the limits
// before allocating.
func TestNewRejects(t *testing.T) {
	tests := []struct {
		capacity uint64
		opts     []Option
		want     error
	}{
		{100, []Option{WithBucketSize(0)}, ErrInvalid},
		{1000, []Option{WithBucketSize(256)}, ErrInvalid},
		{100, []Option{WithMaxIterations(0)}, ErrInvalid},
		{100, []Option{WithMaxIterations(65536)}, ErrInvalid},
		{100, []Option{WithExpansion(32769)}, ErrInvalid},
		{3, nil, ErrInvalid},
		{9, []Option{WithBucketSize(5)}, ErrInvalid},
		{0, nil, ErrInvalid},
		{1 << 60, nil, ErrTooLarge},                           // 2^59 buckets: beyond MaxBuckets
		{1<<64 - 1, []Option{WithBucketSize(1)}, ErrTooLarge}, // next power of two overflows
		{1 << 40, nil, ErrTooLarge},                           // 1 TiB: beyond DefaultMaxBytes
		{2048, []Option{WithMaxBytes(2047)}, ErrTooLarge},
	}
	for _, tt := range tests {
		if _, err := New(tt.capacity, tt.opts...); !errors.Is(err, tt.want) {
			t.Errorf("New(%d, …) = %v, want %v", tt.capacity, err, tt.want)
		}
	}
	if _, err := New(2048, WithMaxBytes(2048)); err != nil {
		t.Errorf("a filter of exactly the limit: %v", err)
	}
}

// Items added and not deleted always test present, across kicks, growth,
// deletes and compaction; Count is at least the copies added.
func TestNoFalseNegatives(t *testing.T) {
	for _, bs := range []uint64{1, 2, 4} {
		for _, exp := range []uint64{1, 2, 4} {
			f := mustNew(t, 64, WithBucketSize(bs), WithExpansion(exp))
			copies := map[string]uint64{}
			item := func(i int) string { return fmt.Sprint("item-", i%700) }
			for i := range 3000 {
				it := item(i * 7)
				if i%3 == 2 && copies[it] > 0 {
					if !f.DeleteString(it) {
						t.Fatalf("bs %d exp %d: Delete(%s) of a present item reports absent", bs, exp, it)
					}
					copies[it]--
					continue
				}
				if err := f.AddString(it); err != nil {
					t.Fatalf("bs %d exp %d: Add: %v", bs, exp, err)
				}
				copies[it]++
			}
			total := uint64(0)
			for it, n := range copies {
				total += n
				if n > 0 && !f.TestString(it) || f.CountString(it) < n {
					t.Fatalf("bs %d exp %d: %s added %d times: Test %v Count %d", bs, exp, it, n, f.TestString(it), f.CountString(it))
				}
			}
			if f.Items() != total {
				t.Errorf("bs %d exp %d: Items %d, want %d", bs, exp, f.Items(), total)
			}
			if f.Filters() < 2 {
				t.Errorf("bs %d exp %d: the filter never grew: the test reaches no growth", bs, exp)
			}
		}
	}
}

// A filter that cannot grow refuses an item with ErrFull, and the failed
// kick-out leaves every byte as it was.
func TestFullFilterUndoesKicks(t *testing.T) {
	for _, bs := range []uint64{1, 2, 3, 4} {
		f := mustNew(t, 64, WithBucketSize(bs), WithExpansion(0), WithMaxIterations(50))
		var full int
		for i := 0; full < 20; i++ {
			before := append([]byte(nil), f.subs[0].data...)
			items := f.Items()
			err := f.AddString(fmt.Sprint(i))
			if err == nil {
				continue
			}
			if !errors.Is(err, ErrFull) {
				t.Fatalf("bucket size %d: Add: %v, want ErrFull", bs, err)
			}
			full++
			if !bytes.Equal(before, f.subs[0].data) || f.Items() != items {
				t.Fatalf("bucket size %d: a refused Add changed the filter", bs)
			}
			if ok, err := f.AddUniqueString(fmt.Sprint(i)); ok || !errors.Is(err, ErrFull) && err != nil {
				t.Fatalf("bucket size %d: AddUnique of a refused item: %v %v", bs, ok, err)
			}
		}
		if f.Filters() != 1 {
			t.Errorf("bucket size %d: a non-growing filter has %d sub-filters", bs, f.Filters())
		}
	}
}

// A growth beyond WithMaxBytes fails with ErrTooLarge and changes
// nothing.
func TestGrowthBeyondLimit(t *testing.T) {
	f := mustNew(t, 64, WithExpansion(2), WithMaxBytes(64+128))
	var err error
	for i := 0; err == nil; i++ {
		err = f.AddString(fmt.Sprint(i))
	}
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Add past the limit: %v, want ErrTooLarge", err)
	}
	if f.Filters() != 2 || f.Bytes() != 192 {
		t.Errorf("after the refused growth: %d sub-filters, %d bytes; want 2, 192", f.Filters(), f.Bytes())
	}
	if st := GrowFailed; st.Err() != ErrTooLarge || NoSpace.Err() != ErrFull || Inserted.Err() != nil || Exists.Err() != nil {
		t.Error("Status.Err maps the outcomes wrongly")
	}
}

// AddUnique stores an item once; Add stores every copy; Delete removes
// one copy at a time.
func TestDuplicates(t *testing.T) {
	f := mustNew(t, 1024)
	for i := range 3 {
		ok, err := f.AddUniqueString("x")
		if err != nil || ok != (i == 0) {
			t.Fatalf("AddUnique #%d = %v, %v", i, ok, err)
		}
	}
	for range 3 {
		if err := f.AddString("x"); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.CountString("x"); n != 4 {
		t.Fatalf("Count after 1 AddUnique and 3 Adds = %d, want 4", n)
	}
	for i := 3; i >= 0; i-- {
		if !f.DeleteString("x") || f.CountString("x") != uint64(i) {
			t.Fatalf("after a Delete: Count %d, want %d", f.CountString("x"), i)
		}
	}
	if f.DeleteString("x") || f.TestString("x") || f.Items() != 0 || f.Info().Deleted != 4 {
		t.Errorf("after deleting every copy: Test %v Items %d Info %+v", f.TestString("x"), f.Items(), f.Info())
	}
}

// TestGrowHook: a hook that refuses makes the growth fail as one past the
// limits, with nothing allocated, and one that accepts sees each new
// sub-filter's bytes.
func TestGrowHook(t *testing.T) {
	f, err := New(4, WithBucketSize(1), WithMaxIterations(1))
	if err != nil {
		t.Fatal(err)
	}
	var asked []uint64
	refuse := errors.New("no budget")
	f.SetGrowHook(func(extra uint64) error { asked = append(asked, extra); return refuse })
	var st []Status
	for i := range 64 {
		st = append(st, f.insert(keyOf(uint64(i)*0x9e3779b97f4a7c15)))
	}
	if f.Filters() != 1 || f.Bytes() != 4 || len(asked) == 0 || asked[0] != 4 {
		t.Fatalf("refusing hook: %d sub-filters, %d bytes, asked %v", f.Filters(), f.Bytes(), asked)
	}
	if !slices.Contains(st, GrowFailed) || !errors.Is(GrowFailed.Err(), ErrTooLarge) {
		t.Fatalf("statuses %v: want a GrowFailed", st)
	}
	asked = nil
	f.SetGrowHook(func(extra uint64) error { asked = append(asked, extra); return nil })
	for i := range 64 {
		if err := f.AddHash(uint64(i) * 0x9e3779b97f4a7c15); err != nil {
			t.Fatal(err)
		}
	}
	if uint64(len(asked)) != uint64(f.Filters()-1) || f.Bytes() != 4*uint64(f.Filters()) {
		t.Fatalf("accepting hook: asked %v, %d sub-filters, %d bytes", asked, f.Filters(), f.Bytes())
	}
}

// TestTestManyMatchesTest: TestMany answers as TestHash item by item, for
// buckets of every width (within a word, where it reads buckets ahead,
// and wider), before and after growth, for batches of every length
// around its batch size; and finds every item added.
func TestTestManyMatchesTest(t *testing.T) {
	var items [][]byte
	for i := range 2000 {
		items = append(items, fmt.Appendf(nil, "m%d", i))
	}
	for _, bs := range []uint64{1, 2, 3, 4, 8, 12} {
		f := mustNew(t, 512, WithBucketSize(bs), WithExpansion(2))
		for round := range 2 {
			if round == 1 {
				for _, st := range f.AddMany(items[:1000], nil) {
					if st.Err() != nil {
						t.Fatalf("bs %d: add: %v", bs, st.Err())
					}
				}
				if f.Filters() < 2 {
					t.Fatalf("bs %d: no growth", bs)
				}
			}
			dst := make([]bool, 0, len(items))
			for _, n := range []int{0, 1, 31, 32, 33, 100, 2000} {
				for _, from := range []int{0, min(900, 2000-n), 2000 - n} {
					dst = f.TestMany(items[from:from+n], dst)
					for i, it := range items[from : from+n] {
						if want := f.TestHash(Hash(it)); dst[i] != want {
							t.Fatalf("bs %d round %d, n %d from %d: item %d TestMany %v, TestHash %v", bs, round, n, from, i, dst[i], want)
						}
						if round == 1 && from+i < 1000 && !dst[i] {
							t.Fatalf("bs %d: false negative %s", bs, it)
						}
					}
				}
			}
		}
	}
}

// TestAddManyMatchesInsert: AddMany and AddUniqueMany, whose batches
// read their buckets ahead, store what inserting the items one after the
// other stores (the same outcomes, the same bytes), for several bucket
// sizes, through growth and past a full filter that cannot grow, for
// batch lengths around the batch size, with repeated items.
func TestAddManyMatchesInsert(t *testing.T) {
	items := make([][]byte, 3000)
	for i := range items {
		items[i] = fmt.Appendf(nil, "a%d", i%2400) // the last 600 repeat
	}
	for _, bs := range []uint64{1, 2, 4} {
		for _, exp := range []uint64{0, 2} {
			for _, unique := range []bool{false, true} {
				for _, chunk := range []int{1, 31, 32, 33, 3000} {
					many := mustNew(t, 512, WithBucketSize(bs), WithExpansion(exp))
					one := mustNew(t, 512, WithBucketSize(bs), WithExpansion(exp))
					got := make([]Status, len(items))
					for off := 0; off < len(items); off += chunk {
						end := min(off+chunk, len(items))
						if unique {
							many.AddUniqueMany(items[off:end], got[off:end])
						} else {
							many.AddMany(items[off:end], got[off:end])
						}
					}
					full := 0
					for i, it := range items {
						var want Status
						if unique {
							want = one.insertUnique(keyOf(Hash(it)))
						} else {
							want = one.insert(keyOf(Hash(it)))
						}
						if got[i] != want {
							t.Fatalf("bs %d exp %d unique %v chunk %d: item %d AddMany %v, one by one %v", bs, exp, unique, chunk, i, got[i], want)
						}
						if want.Err() != nil {
							full++
						}
					}
					a, _ := many.MarshalBinary()
					b, _ := one.MarshalBinary()
					if !bytes.Equal(a, b) {
						t.Fatalf("bs %d exp %d unique %v chunk %d: the filters differ", bs, exp, unique, chunk)
					}
					if exp == 0 && full == 0 || exp > 0 && one.Filters() < 2 {
						t.Fatalf("bs %d exp %d: %d refused, %d sub-filters: neither full nor grown", bs, exp, full, one.Filters())
					}
				}
			}
		}
	}
}
