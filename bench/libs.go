// Package bench compares the in-memory filter of github.com/bloomery/bloom
// with two peer Bloom filter libraries, github.com/bits-and-blooms/bloom/v3
// and github.com/greatroar/blobloom, and its scalable and counting filters
// with those of github.com/tylertreat/BoomFilters (scalable.go,
// cmd/scalable; counting.go, cmd/counting).
//
// It is a separate module so that the peers never become dependencies of
// the library itself. The package holds thin adapters over the three
// libraries, deterministic key generation and the statistics used by the
// comparison program in cmd/compare; filter_test.go holds the standard
// `go test -bench` benchmarks. See README.md for how to run both.
//
// Every adapter method works on a whole batch of keys, so the interface
// call happens once per pass and the timed inner loops call the concrete
// library methods directly.
package bench

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/bloomery/bloom"

	bitsbloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/cespare/xxhash/v2"
	"github.com/greatroar/blobloom"
)

// KeySize is the length in bytes of every generated key.
const KeySize = 16

// Library names accepted by NewLib, in the default order.
const (
	Ours        = "bloomery"         // our filter, Blocked layout (the default)
	OursClassic = "bloomery-classic" // our filter, Classic layout
	Blobloom    = "blobloom"         // github.com/greatroar/blobloom + xxhash
	BitsBlooms  = "bits-and-blooms"  // github.com/bits-and-blooms/bloom/v3
	// Floor is not a filter: the cheapest conceivable lookup, one XXH3-128
	// hash and one 64-bit load from an array as large as our blocked
	// filter. It bounds what any layout can reach in this harness.
	Floor = "floor"
	// FloorAdd is not a filter either: the cheapest add of our blocked
	// filter's k bits, one XXH3-128 hash and k memory ORs into one 64-byte
	// block, reporting nothing (floor_add.go). It bounds what any blocked
	// add of k bits can reach in this harness.
	FloorAdd = "floor-add"
	// OursMany is our blocked filter filled with AddMany in batches of 256
	// (TestAll and TestCount still test one key per call).
	OursMany = "bloomery-addmany"
)

// LibNames lists every library NewLib knows, in the default order.
var LibNames = []string{Ours, OursMany, OursClassic, Blobloom, BitsBlooms, Floor, FloorAdd}

// Lib is one library's filter behind a batch-oriented interface.
type Lib interface {
	// Name is the library name as given to NewLib.
	Name() string
	// AddFlat inserts every KeySize-byte key of the flat buffer buf.
	AddFlat(buf []byte)
	// TestFlat returns how many KeySize-byte keys of buf test positive.
	TestFlat(buf []byte) int
	// TestAll returns how many of keys test positive, one Test per key;
	// the caller branches on each result.
	TestAll(keys [][]byte) int
	// TestCount is TestAll with a branch-free caller: it adds each result
	// as 0 or 1, so a hard-to-predict result costs no branch mispredict.
	TestCount(keys [][]byte) int
	// Bits is the size of the filter's bit array.
	Bits() uint64
	// K describes the number of hash probes per key.
	K() string
}

// Batcher is implemented by libraries with a batched membership test.
type Batcher interface {
	// TestBatched returns how many of keys test positive, testing them
	// batch keys at a time with one TestMany call per batch.
	TestBatched(keys [][]byte, batch int) int
}

// NewLib returns an empty filter of the named library sized for n keys at
// false-positive rate p.
func NewLib(name string, n uint64, p float64) (Lib, error) {
	switch name {
	case Ours:
		f, err := bloom.New(n, p, bloom.WithLayout(bloom.Blocked))
		return &ours{name: name, f: f}, err
	case OursClassic:
		f, err := bloom.New(n, p, bloom.WithLayout(bloom.Classic))
		return &ours{name: name, f: f}, err
	case Blobloom:
		cfg := blobloom.Config{Capacity: n, FPRate: p}
		_, k := blobloom.Optimize(cfg)
		return &blob{f: blobloom.NewOptimized(cfg), k: k}, nil
	case BitsBlooms:
		return &bab{f: bitsbloom.NewWithEstimates(uint(n), p)}, nil
	case OursMany:
		f, err := bloom.New(n, p)
		return &oursMany{ours: ours{name: name, f: f}}, err
	case Floor:
		f, err := bloom.New(n, p)
		if err != nil {
			return nil, err
		}
		return &floor{words: make([]uint64, f.Bits()/64)}, nil
	case FloorAdd:
		return newFloorAdd(n, p)
	}
	return nil, fmt.Errorf("unknown library %q (want one of %s)", name, strings.Join(LibNames, ", "))
}

// ours adapts *bloom.Filter.
type ours struct {
	name string
	f    *bloom.Filter
	dst  []bool
}

func (o *ours) Name() string { return o.name }
func (o *ours) Bits() uint64 { return o.f.Bits() }
func (o *ours) K() string    { return fmt.Sprint(o.f.K()) }

func (o *ours) AddFlat(buf []byte) {
	f := o.f
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		f.Add(buf[i : i+KeySize : i+KeySize])
	}
}

func (o *ours) TestFlat(buf []byte) int {
	f, c := o.f, 0
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		if f.Test(buf[i : i+KeySize : i+KeySize]) {
			c++
		}
	}
	return c
}

func (o *ours) TestAll(keys [][]byte) int {
	f, c := o.f, 0
	for _, k := range keys {
		if f.Test(k) {
			c++
		}
	}
	return c
}

func (o *ours) TestCount(keys [][]byte) int {
	f, c := o.f, 0
	for _, k := range keys {
		c += b2i(f.Test(k))
	}
	return c
}

func (o *ours) TestBatched(keys [][]byte, batch int) int {
	f, c, dst := o.f, 0, o.dst
	for i := 0; i < len(keys); i += batch {
		dst = f.TestMany(keys[i:min(i+batch, len(keys))], dst)
		for _, ok := range dst {
			if ok {
				c++
			}
		}
	}
	o.dst = dst
	return c
}

// blob adapts *blobloom.Filter; keys are hashed with xxhash.Sum64, as its
// README recommends.
type blob struct {
	f *blobloom.Filter
	k int
}

func (b *blob) Name() string { return Blobloom }
func (b *blob) Bits() uint64 { return b.f.NumBits() }

// K is blobloom's nhashes from Optimize. One of those "hashes" picks the
// block, so it sets nhashes-1 bits per key.
func (b *blob) K() string { return fmt.Sprintf("%d (%d bits)", b.k, b.k-1) }

func (b *blob) AddFlat(buf []byte) {
	f := b.f
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		f.Add(xxhash.Sum64(buf[i : i+KeySize : i+KeySize]))
	}
}

func (b *blob) TestFlat(buf []byte) int {
	f, c := b.f, 0
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		if f.Has(xxhash.Sum64(buf[i : i+KeySize : i+KeySize])) {
			c++
		}
	}
	return c
}

func (b *blob) TestAll(keys [][]byte) int {
	f, c := b.f, 0
	for _, k := range keys {
		if f.Has(xxhash.Sum64(k)) {
			c++
		}
	}
	return c
}

// bab adapts *bitsbloom.BloomFilter.
func (b *blob) TestCount(keys [][]byte) int {
	f, c := b.f, 0
	for _, k := range keys {
		c += b2i(f.Has(xxhash.Sum64(k)))
	}
	return c
}

type bab struct{ f *bitsbloom.BloomFilter }

func (b *bab) Name() string { return BitsBlooms }
func (b *bab) Bits() uint64 { return uint64(b.f.Cap()) }
func (b *bab) K() string    { return fmt.Sprint(b.f.K()) }

func (b *bab) AddFlat(buf []byte) {
	f := b.f
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		f.Add(buf[i : i+KeySize : i+KeySize])
	}
}

func (b *bab) TestFlat(buf []byte) int {
	f, c := b.f, 0
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		if f.Test(buf[i : i+KeySize : i+KeySize]) {
			c++
		}
	}
	return c
}

func (b *bab) TestAll(keys [][]byte) int {
	f, c := b.f, 0
	for _, k := range keys {
		if f.Test(k) {
			c++
		}
	}
	return c
}

func (b *bab) TestCount(keys [][]byte) int {
	f, c := b.f, 0
	for _, k := range keys {
		c += b2i(f.Test(k))
	}
	return c
}

// b2i is 1 for true, 0 for false; the compiler emits SETcc, no branch.
func b2i(b bool) int {
	var i int
	if b {
		i = 1
	}
	return i
}

// floor is one hash and one load per key (see Floor).
type floor struct{ words []uint64 }

func (f *floor) Name() string { return Floor }
func (f *floor) Bits() uint64 { return uint64(len(f.words)) * 64 }
func (f *floor) K() string    { return "1 load" }

func (f *floor) look(k []byte) bool {
	h := bloom.HashBytes(k)
	hi, _ := bits.Mul64(h.H1, uint64(len(f.words)))
	return f.words[hi]>>(h.H2&63)&1 != 0
}

func (f *floor) AddFlat(buf []byte) {
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		h := bloom.HashBytes(buf[i : i+KeySize])
		hi, _ := bits.Mul64(h.H1, uint64(len(f.words)))
		f.words[hi] |= 1 << (h.H2 & 63)
	}
}

func (f *floor) TestFlat(buf []byte) int {
	c := 0
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		if f.look(buf[i : i+KeySize]) {
			c++
		}
	}
	return c
}

func (f *floor) TestAll(keys [][]byte) int {
	c := 0
	for _, k := range keys {
		if f.look(k) {
			c++
		}
	}
	return c
}

func (f *floor) TestCount(keys [][]byte) int {
	c := 0
	for _, k := range keys {
		c += b2i(f.look(k))
	}
	return c
}

// oursMany fills with AddMany; everything else is ours.
type oursMany struct {
	ours
	batch [][]byte
}

func (o *oursMany) AddFlat(buf []byte) {
	const n = 256
	if o.batch == nil {
		o.batch = make([][]byte, n)
	}
	for len(buf) >= KeySize {
		c := min(n, len(buf)/KeySize)
		for i := range c {
			o.batch[i] = buf[i*KeySize : (i+1)*KeySize : (i+1)*KeySize]
		}
		o.f.AddMany(o.batch[:c])
		buf = buf[c*KeySize:]
	}
}
