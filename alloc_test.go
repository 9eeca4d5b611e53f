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
