package bench

import (
	"testing"

	boom "github.com/tylertreat/BoomFilters"
)

// TestCountingAdapters checks both counting adapters: no false negatives
// after adds, removals that report each added key once, no false negatives
// for the keys left after removing others, and the counter array's size.
func TestCountingAdapters(t *testing.T) {
	const n, p = 20_000, 0.01
	keys := Keys(5, n)
	half := keys[:n/2*KeySize]
	for _, name := range CountingLibNames {
		l, err := NewCountingLib(name, n, p)
		if err != nil {
			t.Fatal(err)
		}
		l.AddFlat(keys)
		if c := l.TestAll(Split(keys)); c != n {
			t.Errorf("%s: %d false negatives", name, n-c)
		}
		if c := l.RemoveFlat(half); c != n/2 {
			t.Errorf("%s: %d of %d removals reported present", name, c, n/2)
		}
		if c := l.TestAll(Split(keys[len(half):])); c != n-n/2 {
			t.Errorf("%s: %d false negatives after removing the other half", name, n-n/2-c)
		}
		if c := l.RemoveFlat(keys[len(half):]); c != n-n/2 {
			t.Errorf("%s: %d of %d removals of the rest reported present", name, c, n-n/2)
		}
		// Empty again: nothing left to test present, nothing to remove.
		if c := l.TestAll(Split(keys)); c != 0 {
			t.Errorf("%s: %d keys test present after removing all", name, c)
		}
		if c := l.RemoveFlat(keys); c != 0 {
			t.Errorf("%s: %d removals from an empty filter reported present", name, c)
		}
		size, err := l.Bytes()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want uint64
		switch name {
		case OursCounting:
			want = l.Counters() / 2
		case BoomCounting:
			want = (uint64(boom.OptimalM(n, p))*BoomBucketBits + 7) / 8
		}
		if size != want || l.K() == 0 {
			t.Errorf("%s: %d bytes, k %d; want %d bytes", name, size, l.K(), want)
		}
		t.Logf("%s: %d counters, k %d, %d bytes", name, l.Counters(), l.K(), size)
	}
}

// TestCountingRemoveMultiset checks that a key added three times stays
// present through two removals and goes with the third, and that a
// further removal reports it absent.
func TestCountingRemoveMultiset(t *testing.T) {
	key := Keys(6, 1)
	for _, name := range CountingLibNames {
		l, err := NewCountingLib(name, 1000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			l.AddFlat(key)
		}
		for i, want := range []int{1, 1, 1, 0} {
			if c := l.RemoveFlat(key); c != want {
				t.Errorf("%s: removal %d reported %d, want %d", name, i+1, c, want)
			}
			if present, wantPresent := l.TestAll(Split(key)) == 1, i < 2; present != wantPresent {
				t.Errorf("%s: after removal %d present = %v", name, i+1, present)
			}
		}
	}
}
