package bench

import (
	"math/bits"
	"testing"

	"github.com/bloomery/bloom"

	bitsbloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/cespare/xxhash/v2"
	"github.com/greatroar/blobloom"
)

// All benchmarks use filters for benchN keys at rate benchP. Add cycles
// through benchN fresh keys and starts a new filter when it wraps around;
// Test and TestMany query a fixed shuffled mix of half present, half
// absent keys. ns/op is per key, also for TestMany.
const (
	benchN       = 1_000_000
	benchP       = 0.01
	benchQueries = 1 << 20
	benchBatch   = 256
	benchSeed    = 1
)

var (
	benchSink int
	benchFlat = Keys(benchSeed, benchN)
	benchKeys = Split(benchFlat)
	benchQ, _ = Queries(benchSeed, benchFlat, benchQueries)
)

func newOurs(b *testing.B, l bloom.Layout) *bloom.Filter {
	f, err := bloom.New(benchN, benchP, bloom.WithLayout(l))
	if err != nil {
		b.Fatal(err)
	}
	return f
}

func newBlob() *blobloom.Filter {
	return blobloom.NewOptimized(blobloom.Config{Capacity: benchN, FPRate: benchP})
}

func newBAB() *bitsbloom.BloomFilter { return bitsbloom.NewWithEstimates(benchN, benchP) }

func BenchmarkAdd(b *testing.B) {
	ours := func(l bloom.Layout) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			f := newOurs(b, l)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := i % benchN
				if j == 0 && i > 0 {
					b.StopTimer()
					f = newOurs(b, l)
					b.StartTimer()
				}
				f.Add(benchKeys[j])
			}
		}
	}
	b.Run("bloomery-blocked", ours(bloom.Blocked))
	b.Run("bloomery-classic", ours(bloom.Classic))
	b.Run("blobloom", func(b *testing.B) {
		b.ReportAllocs()
		f := newBlob()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			j := i % benchN
			if j == 0 && i > 0 {
				b.StopTimer()
				f = newBlob()
				b.StartTimer()
			}
			f.Add(xxhash.Sum64(benchKeys[j]))
		}
	})
	b.Run("bits-and-blooms", func(b *testing.B) {
		b.ReportAllocs()
		f := newBAB()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			j := i % benchN
			if j == 0 && i > 0 {
				b.StopTimer()
				f = newBAB()
				b.StartTimer()
			}
			f.Add(benchKeys[j])
		}
	})
}

// BenchmarkAddMany is our batched Add; ns/op is per key.
func BenchmarkAddMany(b *testing.B) {
	for _, l := range []bloom.Layout{bloom.Blocked, bloom.Classic} {
		b.Run("bloomery-"+l.String(), func(b *testing.B) {
			b.ReportAllocs()
			f := newOurs(b, l)
			b.ResetTimer()
			for i, pos := 0, 0; i < b.N; {
				if pos == benchN {
					b.StopTimer()
					f, pos = newOurs(b, l), 0
					b.StartTimer()
				}
				cnt := min(benchBatch, benchN-pos, b.N-i)
				benchSink += f.AddMany(benchKeys[pos : pos+cnt])
				i, pos = i+cnt, pos+cnt
			}
		})
	}
}

func BenchmarkTest(b *testing.B) {
	const mask = benchQueries - 1
	for _, l := range []bloom.Layout{bloom.Blocked, bloom.Classic} {
		b.Run("bloomery-"+l.String(), func(b *testing.B) {
			b.ReportAllocs()
			f := newOurs(b, l)
			for _, k := range benchKeys {
				f.Add(k)
			}
			c := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if f.Test(benchQ[i&mask]) {
					c++
				}
			}
			benchSink += c
		})
	}
	b.Run("blobloom", func(b *testing.B) {
		b.ReportAllocs()
		f := newBlob()
		for _, k := range benchKeys {
			f.Add(xxhash.Sum64(k))
		}
		c := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if f.Has(xxhash.Sum64(benchQ[i&mask])) {
				c++
			}
		}
		benchSink += c
	})
	b.Run("bits-and-blooms", func(b *testing.B) {
		b.ReportAllocs()
		f := newBAB()
		for _, k := range benchKeys {
			f.Add(k)
		}
		c := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if f.Test(benchQ[i&mask]) {
				c++
			}
		}
		benchSink += c
	})
}

// BenchmarkTestMany is our batched Test, benchBatch keys per call; ns/op
// is per key.
func BenchmarkTestMany(b *testing.B) {
	for _, l := range []bloom.Layout{bloom.Blocked, bloom.Classic} {
		b.Run("bloomery-"+l.String(), func(b *testing.B) {
			b.ReportAllocs()
			f := newOurs(b, l)
			for _, k := range benchKeys {
				f.Add(k)
			}
			dst := make([]bool, 0, benchBatch)
			c := 0
			b.ResetTimer()
			for i := 0; i < b.N; i += benchBatch {
				j := i % benchQueries // benchBatch divides benchQueries
				dst = f.TestMany(benchQ[j:min(j+benchBatch, j+b.N-i)], dst)
				for _, ok := range dst {
					if ok {
						c++
					}
				}
			}
			benchSink += c
		})
	}
}

// TestAdaptersAgree checks that every adapter finds all inserted keys and
// that our TestMany agrees with Test, on a small filter.
func TestAdaptersAgree(t *testing.T) {
	const n = 10_000
	keys := Keys(2, n)
	q, present := Queries(2, keys, 4096)
	for _, name := range LibNames {
		l, err := NewLib(name, n, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		l.AddFlat(keys)
		if c := l.TestAll(present); c != len(present) {
			t.Errorf("%s: %d of %d present keys missing", name, len(present)-c, len(present))
		}
		if c := l.TestFlat(keys); c != n {
			t.Errorf("%s: TestFlat found %d of %d", name, c, n)
		}
		all := l.TestAll(q)
		if bt, ok := l.(Batcher); ok {
			for _, batch := range []int{1, 7, 256, 10000} {
				if c := bt.TestBatched(q, batch); c != all {
					t.Errorf("%s: TestMany batch %d found %d, Test %d", name, batch, c, all)
				}
			}
		}
	}
}

func TestWilsonUpper(t *testing.T) {
	// 0 of 1e6: about z²/n.
	if u := WilsonUpper(0, 1e6, Z99); u < 5.4e-6 || u > 5.5e-6 {
		t.Errorf("WilsonUpper(0, 1e6) = %g", u)
	}
	// 100 of 1e6: centre 1e-4, upper about 1e-4 + 2.33*1e-5.
	if u := WilsonUpper(100, 1e6, Z99); u < 1.22e-4 || u > 1.27e-4 {
		t.Errorf("WilsonUpper(100, 1e6) = %g", u)
	}
	if m := Median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("Median = %g", m)
	}
}

// TestFloorAddSetsKBits: the floor-add bound does the work it stands
// for, k bits a key in one block: a sparse fill of 1000 keys sets about
// 1000·k bits, in as many blocks as keys, but for the keys that share one.
func TestFloorAddSetsKBits(t *testing.T) {
	f, err := newFloorAdd(1_000_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	f.AddFlat(Keys(3, 1000))
	set, blocks := 0, 0
	for b := 0; b < len(f.words); b += 8 {
		n := 0
		for _, w := range f.words[b : b+8] {
			n += bits.OnesCount64(w)
		}
		set += n
		blocks += b2i(n > 0)
	}
	if lo, hi := 1000*f.k*95/100, 1000*f.k; set < lo || set > hi {
		t.Errorf("%d bits set by 1000 keys at k = %d, want %d–%d", set, f.k, lo, hi)
	}
	// About 19,500 blocks: some 25 keys share a block with another.
	if blocks < 950 || blocks > 1000 {
		t.Errorf("%d blocks touched by 1000 keys, want 950–1000", blocks)
	}
}
