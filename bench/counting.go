package bench

import (
	"encoding/binary"
	"fmt"

	"github.com/bloomery/bloom"

	boom "github.com/tylertreat/BoomFilters"
)

// Names of the counting filters NewCountingLib knows.
const (
	OursCounting = "bloomery-counting" // bloom.Counting
	BoomCounting = "boomfilters"       // github.com/tylertreat/BoomFilters CountingBloomFilter
)

// BoomBucketBits is the counter width given to BoomFilters, the one its
// NewDefaultCountingBloomFilter uses and the width of ours.
const BoomBucketBits = 4

// CountingLibNames lists the counting filters, in the order timed.
var CountingLibNames = []string{OursCounting, BoomCounting}

// CountingLib is one library's counting filter behind a batch-oriented
// interface; the timed loops call the concrete methods directly.
type CountingLib interface {
	// Name is the library name as given to NewCountingLib.
	Name() string
	// AddFlat adds every KeySize-byte key of the flat buffer buf.
	AddFlat(buf []byte)
	// RemoveFlat removes every KeySize-byte key of buf and returns how many
	// removals reported the key present (ours: Remove; BoomFilters:
	// TestAndRemove, its only removal).
	RemoveFlat(buf []byte) int
	// TestAll returns how many of keys test positive, one Test per key;
	// the caller branches on each result.
	TestAll(keys [][]byte) int
	// K is the number of counters probed per key.
	K() uint
	// Counters is the number of counters, m.
	Counters() uint64
	// Bytes is the size in bytes of the counter array as allocated.
	Bytes() (uint64, error)
}

// NewCountingLib returns an empty counting filter of the named library
// for n items at false-positive rate p, with 4-bit counters.
func NewCountingLib(name string, n uint64, p float64) (CountingLib, error) {
	switch name {
	case OursCounting:
		f, err := bloom.NewCounting(n, p)
		return &oursCounting{f: f}, err
	case BoomCounting:
		return &boomCounting{f: boom.NewCountingBloomFilter(uint(n), BoomBucketBits, p)}, nil
	}
	return nil, fmt.Errorf("unknown counting filter %q (want %s or %s)", name, OursCounting, BoomCounting)
}

// oursCounting adapts *bloom.Counting.
type oursCounting struct{ f *bloom.Counting }

func (o *oursCounting) Name() string           { return OursCounting }
func (o *oursCounting) K() uint                { return uint(o.f.K()) }
func (o *oursCounting) Counters() uint64       { return o.f.Counters() }
func (o *oursCounting) Bytes() (uint64, error) { return o.f.Bytes(), nil }

func (o *oursCounting) AddFlat(buf []byte) {
	f := o.f
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		f.Add(buf[i : i+KeySize : i+KeySize])
	}
}

func (o *oursCounting) RemoveFlat(buf []byte) int {
	f, c := o.f, 0
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		if f.Remove(buf[i : i+KeySize : i+KeySize]) {
			c++
		}
	}
	return c
}

func (o *oursCounting) TestAll(keys [][]byte) int {
	f, c := o.f, 0
	for _, k := range keys {
		if f.Test(k) {
			c++
		}
	}
	return c
}

// boomCounting adapts *boom.CountingBloomFilter.
type boomCounting struct{ f *boom.CountingBloomFilter }

func (b *boomCounting) Name() string     { return BoomCounting }
func (b *boomCounting) K() uint          { return b.f.K() }
func (b *boomCounting) Counters() uint64 { return uint64(b.f.Capacity()) }

func (b *boomCounting) AddFlat(buf []byte) {
	f := b.f
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		f.Add(buf[i : i+KeySize : i+KeySize])
	}
}

func (b *boomCounting) RemoveFlat(buf []byte) int {
	f, c := b.f, 0
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		if f.TestAndRemove(buf[i : i+KeySize : i+KeySize]) {
			c++
		}
	}
	return c
}

func (b *boomCounting) TestAll(keys [][]byte) int {
	f, c := b.f, 0
	for _, k := range keys {
		if f.Test(k) {
			c++
		}
	}
	return c
}

// Bytes reads the length of the bucket array from BoomFilters' own dump
// (WriteTo), since it exports only m (Capacity): the dump is m, k, count,
// the index buffer's length and entries (uint64 each), then the buckets'
// bucket bits and maximum (one byte each), count and data length (uint64),
// and the data. Only the head of the dump is kept.
func (b *boomCounting) Bytes() (uint64, error) {
	var w headWriter
	if _, err := b.f.WriteTo(&w); err != nil {
		return 0, err
	}
	h := w.head[:]
	u64 := func(i int) uint64 { return binary.BigEndian.Uint64(h[8*i:]) }
	m, k, ibc := u64(0), u64(1), u64(3)
	if k > 64 || ibc != k {
		return 0, fmt.Errorf("boomfilters dump: k %d, index buffer of %d", k, ibc)
	}
	bk := h[32+8*ibc:]
	bits, count, size := bk[0], binary.BigEndian.Uint64(bk[2:]), binary.BigEndian.Uint64(bk[10:])
	head := 32 + 8*ibc + 18
	if bits != BoomBucketBits || count != m || size != (m*BoomBucketBits+7)/8 || w.n != head+size {
		return 0, fmt.Errorf("boomfilters dump: %d %d-bit buckets in %d bytes (dump %d bytes), want %d %d-bit buckets",
			count, bits, size, w.n, m, BoomBucketBits)
	}
	return size, nil
}

// headWriter keeps the first bytes written to it and counts them all.
type headWriter struct {
	head [32 + 8*64 + 18]byte
	n    uint64
}

func (w *headWriter) Write(p []byte) (int, error) {
	if w.n < uint64(len(w.head)) {
		copy(w.head[w.n:], p)
	}
	w.n += uint64(len(p))
	return len(p), nil
}
