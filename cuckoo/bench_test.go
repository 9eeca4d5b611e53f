package cuckoo

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// benchKeys are n distinct 16-byte keys in one flat buffer.
func benchKeys(n int) [][]byte {
	flat := make([]byte, 16*n)
	keys := make([][]byte, n)
	for i := range keys {
		k := flat[16*i : 16*i+16 : 16*i+16]
		binary.LittleEndian.PutUint64(k, uint64(i)*0x9e3779b97f4a7c15)
		binary.LittleEndian.PutUint64(k[8:], uint64(i))
		keys[i] = k
	}
	return keys
}

// The hot paths on a filter of 10^6 items with RedisBloom's defaults,
// sized for twice as many (one sub-filter). Comparisons with other
// libraries are in the bench module (BenchmarkCuckoo).
func BenchmarkFilter(b *testing.B) {
	const n = 1_000_000
	keys := benchKeys(2 * n)
	items, absent := keys[:n], keys[n:]
	full := mustNew(b, 2*n)
	full.AddMany(items, nil)
	b.Run("Add", func(b *testing.B) {
		b.ReportAllocs()
		var f *Filter
		for i := range b.N {
			if i%n == 0 {
				b.StopTimer()
				f = mustNew(b, 2*n)
				b.StartTimer()
			}
			f.Add(items[i%n])
		}
	})
	b.Run("TestPresent", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			full.Test(items[i%n])
		}
	})
	b.Run("TestAbsent", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			full.Test(absent[i%n])
		}
	})
	b.Run("TestMany", func(b *testing.B) {
		b.ReportAllocs()
		dst := make([]bool, 1000)
		for i := 0; i < b.N; i += 1000 {
			lo := i % n
			full.TestMany(items[lo:lo+1000], dst)
		}
	})
	b.Run("Count", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			full.Count(items[i%n])
		}
	})
	b.Run("DeleteAdd", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			full.Delete(items[i%n])
			full.Add(items[i%n])
		}
	})
	b.Run("Hash", func(b *testing.B) {
		b.ReportAllocs()
		s := uint64(0)
		for i := range b.N {
			s += Hash(items[i%n])
		}
		sink = s
	})
}

var sink uint64

// Test on a filter of 10^7 items in buckets of 4 (one sub-filter of 16
// MiB): memory-bound, as the bench module's comparison at 10^7.
func BenchmarkTestLarge(b *testing.B) {
	const n = 10_000_000
	keys := benchKeys(2 * n)
	f := mustNew(b, n, WithBucketSize(4), WithMaxIterations(500))
	f.AddMany(keys[:n], nil)
	b.ReportMetric(float64(f.Filters()), "filters")
	b.ResetTimer()
	for i := range b.N {
		f.Test(keys[(i*7)%(2*n)])
	}
}

// TestMany on the filter of BenchmarkTestLarge, in batches of 16 (a
// pipeline of CF.EXISTS run together by the server) and of 1024 (a
// large CF.MEXISTS); ns/op is per item.
func BenchmarkTestManyLarge(b *testing.B) {
	const n = 10_000_000
	keys := benchKeys(2 * n)
	f := mustNew(b, n, WithBucketSize(4), WithMaxIterations(500))
	f.AddMany(keys[:n], nil)
	for _, batch := range []int{16, 1024} {
		b.Run(fmt.Sprint(batch), func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]bool, batch)
			next := 0
			for i := 0; i < b.N; i += batch {
				if next+batch > len(keys) {
					next = 0
				}
				f.TestMany(keys[next:next+batch], dst)
				next += batch*7%1000 + batch
			}
		})
	}
}

// AddMany into an empty filter sized for 10^7 items in buckets of 4 (one
// sub-filter of 16 MiB), in batches of 1024 (a large CF.INSERT), against
// Add one item at a time; ns/op is per item. A round stops before the
// filter is full, then starts over on a new one.
func BenchmarkAddManyLarge(b *testing.B) {
	const n = 10_000_000
	keys := benchKeys(n / 2)
	for _, batch := range []int{1, 1024} {
		b.Run(fmt.Sprint(batch), func(b *testing.B) {
			b.ReportAllocs()
			st := make([]Status, batch)
			var f *Filter
			next := len(keys)
			for i := 0; i < b.N; i += batch {
				if next+batch > len(keys) {
					b.StopTimer()
					f, next = mustNew(b, n, WithBucketSize(4), WithMaxIterations(500)), 0
					b.StartTimer()
				}
				if batch == 1 {
					st[0] = f.insert(keyOf(Hash(keys[next])))
				} else {
					f.AddMany(keys[next:next+batch], st)
				}
				next += batch
			}
		})
	}
}
