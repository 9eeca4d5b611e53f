package bloom

import (
	"testing"
)

// TestZeroAllocs checks that the per-item operations allocate nothing, in
// every layout, hash and concurrency mode.
func TestZeroAllocs(t *testing.T) {
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			f := newFilterT(t, 10_000, 0.01, v.opts()...)
			items := genItems("alloc", 100)
			item, str := items[42], string(items[43])
			h := f.Hash(items[44])
			hs := make([]Hash, len(items))
			for i, it := range items {
				hs[i] = f.Hash(it)
			}
			dst := make([]bool, 0, len(items))
			offs := make([]uint64, 0, MaxK)
			i := 0
			ops := []struct {
				name string
				fn   func()
			}{
				{"Add", func() { f.Add(items[i%len(items)]); i++ }},
				{"Test", func() { f.Test(item) }},
				{"AddString", func() { f.AddString(str) }},
				{"TestString", func() { f.TestString(str) }},
				{"AddHash", func() { f.AddHash(h) }},
				{"TestHash", func() { f.TestHash(h) }},
				{"Hash", func() { f.Hash(item) }},
				{"AddMany", func() { f.AddMany(items) }},
				{"TestMany", func() { dst = f.TestMany(items, dst) }},
				{"AddHashes", func() { f.AddHashes(hs) }},
				{"TestHashes", func() { f.TestHashes(hs, dst[:len(hs)]) }},
				{"Offsets", func() { offs = f.Offsets(h, offs[:0]) }},
			}
			for _, op := range ops {
				if n := testing.AllocsPerRun(100, op.fn); n != 0 {
					t.Errorf("%s: %v allocations per call", op.name, n)
				}
			}
		})
	}
}

// TestNoRaceCreationAllocs: creating a small filter allocates the filter and its
// bit array, nothing else, once its sizing is memoised (a Scalable holds
// its first sub-filter inside); with options, one more at most.
func TestNoRaceCreationAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	cases := []struct {
		name string
		max  float64
		fn   func() error
	}{
		{"New", 2, func() error { _, err := New(100, 0.01); return err }},
		{"New/options", 3, func() error { _, err := New(100, 0.01, WithLayout(Classic), WithMaxBytes(1<<20)); return err }},
		{"NewScalable", 2, func() error {
			_, err := NewScalable(100, 0.01, WithRedisBloomSplit())
			return err
		}},
		{"NewScalable/options", 3, func() error {
			_, err := NewScalable(100, 0.01, WithRedisBloomSplit(), WithMaxBytes(1<<20))
			return err
		}},
	}
	for _, c := range cases {
		if err := c.fn(); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = c.fn() }); n > c.max {
			t.Errorf("%s: %v allocations, want at most %v", c.name, n, c.max)
		}
	}
}
