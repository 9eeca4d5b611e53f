package bench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/bloomery/bloom"

	boom "github.com/tylertreat/BoomFilters"
)

// Names of the scalable filters NewScalableLib knows.
const (
	OursScalable = "bloomery-scalable" // bloom.Scalable
	BoomScalable = "boomfilters"       // github.com/tylertreat/BoomFilters ScalableBloomFilter
)

// BoomTightening is the tightening ratio r given to BoomFilters, the one
// its NewDefaultScalableBloomFilter uses.
const BoomTightening = 0.8

// ScalableLibNames lists the scalable filters, in the order timed.
var ScalableLibNames = []string{OursScalable, BoomScalable}

// ScalableLib is one library's scalable filter behind a batch-oriented
// interface; the timed loops call the concrete methods directly.
type ScalableLib interface {
	// Name is the library name as given to NewScalableLib.
	Name() string
	// AddFlat inserts every KeySize-byte key of the flat buffer buf.
	AddFlat(buf []byte) error
	// TestFlat returns how many KeySize-byte keys of buf test positive.
	TestFlat(buf []byte) int
	// TestAll returns how many of keys test positive, one Test per key;
	// the caller branches on each result.
	TestAll(keys [][]byte) int
	// Shape reads the filter's sub-filters and memory.
	Shape() (ScalableShape, error)
}

// ScalableShape is what a scalable filter holds at one moment.
type ScalableShape struct {
	Filters int    // sub-filters
	Bytes   uint64 // bytes of all sub-filters' bit arrays
	// Items is the filter's own item count: ours counts Adds that
	// reported new, BoomFilters counts every Add.
	Items uint64
	// SubItems is the item count of each sub-filter, where the library
	// exposes it (BoomFilters, through its dump); nil otherwise.
	SubItems []uint64
}

// NewScalableLib returns an empty scalable filter of the named library,
// told initial capacity n and compound false-positive rate p. so and opts
// configure ours; BoomFilters gets hint n, rate p and r = BoomTightening.
func NewScalableLib(name string, n uint64, p float64, so bloom.Growth, opts ...bloom.Option) (ScalableLib, error) {
	switch name {
	case OursScalable:
		f, err := bloom.NewScalable(n, p, append([]bloom.Option{bloom.WithGrowth(so)}, opts...)...)
		return &oursScalable{f: f}, err
	case BoomScalable:
		return &boomScalable{f: boom.NewScalableBloomFilter(uint(n), p, BoomTightening)}, nil
	}
	return nil, fmt.Errorf("unknown scalable filter %q (want %s or %s)", name, OursScalable, BoomScalable)
}

// oursScalable adapts *bloom.Scalable.
type oursScalable struct {
	f     *bloom.Scalable
	added uint64 // Adds that reported new
}

func (o *oursScalable) Name() string { return OursScalable }

func (o *oursScalable) AddFlat(buf []byte) error {
	f := o.f
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		isNew, err := f.Add(buf[i : i+KeySize : i+KeySize])
		if err != nil {
			return err
		}
		if isNew {
			o.added++
		}
	}
	return nil
}

func (o *oursScalable) TestFlat(buf []byte) int {
	f, c := o.f, 0
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		if f.Test(buf[i : i+KeySize : i+KeySize]) {
			c++
		}
	}
	return c
}

func (o *oursScalable) TestAll(keys [][]byte) int {
	f, c := o.f, 0
	for _, k := range keys {
		if f.Test(k) {
			c++
		}
	}
	return c
}

func (o *oursScalable) Shape() (ScalableShape, error) {
	if c := o.f.Count(); c != o.added {
		return ScalableShape{}, fmt.Errorf("%s: Count %d, but %d Adds reported new", OursScalable, c, o.added)
	}
	return ScalableShape{Filters: o.f.NumFilters(), Bytes: o.f.Bytes(), Items: o.f.Count()}, nil
}

// boomScalable adapts *boom.ScalableBloomFilter.
type boomScalable struct{ f *boom.ScalableBloomFilter }

func (b *boomScalable) Name() string { return BoomScalable }

func (b *boomScalable) AddFlat(buf []byte) error {
	f := b.f
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		f.Add(buf[i : i+KeySize : i+KeySize])
	}
	return nil
}

func (b *boomScalable) TestFlat(buf []byte) int {
	f, c := b.f, 0
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		if f.Test(buf[i : i+KeySize : i+KeySize]) {
			c++
		}
	}
	return c
}

func (b *boomScalable) TestAll(keys [][]byte) int {
	f, c := b.f, 0
	for _, k := range keys {
		if f.Test(k) {
			c++
		}
	}
	return c
}

// Shape reads BoomFilters' own dump of the filter (WriteTo), since it
// exports neither its sub-filters nor their sizes (its Capacity is the sum
// of the sub-filters' bit counts m): per sub-filter a header (m, k, s,
// count, partitions), per partition a header and its byte array, whose
// length is the bit array as allocated.
func (b *boomScalable) Shape() (ScalableShape, error) {
	var buf bytes.Buffer
	if _, err := b.f.WriteTo(&buf); err != nil {
		return ScalableShape{}, err
	}
	return parseBoomDump(&buf)
}

func parseBoomDump(r *bytes.Buffer) (ScalableShape, error) {
	var sh ScalableShape
	var top struct{ R, FP, Fill, Hint, Filters uint64 }
	if err := binary.Read(r, binary.BigEndian, &top); err != nil {
		return sh, fmt.Errorf("boomfilters dump: %w", err)
	}
	for range top.Filters {
		var sub struct{ M, K, S, Count, Partitions uint64 }
		if err := binary.Read(r, binary.BigEndian, &sub); err != nil {
			return sh, fmt.Errorf("boomfilters dump: %w", err)
		}
		for range sub.Partitions {
			var part struct {
				BucketBits, Max uint8
				Buckets, Len    uint64
			}
			if err := binary.Read(r, binary.BigEndian, &part); err != nil {
				return sh, fmt.Errorf("boomfilters dump: %w", err)
			}
			if part.BucketBits != 1 || part.Buckets != sub.S || part.Len != (sub.S+7)/8 {
				return sh, fmt.Errorf("boomfilters dump: partition of %d %d-bit buckets in %d bytes, want %d 1-bit buckets",
					part.Buckets, part.BucketBits, part.Len, sub.S)
			}
			if _, err := io.CopyN(io.Discard, r, int64(part.Len)); err != nil {
				return sh, fmt.Errorf("boomfilters dump: %w", err)
			}
			sh.Bytes += part.Len
		}
		sh.Filters++
		sh.Items += sub.Count
		sh.SubItems = append(sh.SubItems, sub.Count)
	}
	if r.Len() != 0 {
		return sh, fmt.Errorf("boomfilters dump: %d bytes left over", r.Len())
	}
	return sh, nil
}
