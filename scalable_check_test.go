package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"strings"
	"testing"
)

// Crafted Scalable headers (issue 11): BF.LOADCHUNK hands the header of a
// dump to LoadScalableHeader, and a file to the kind-2 decoder; both must
// refuse a sub-filter whose geometry cannot hold its rate, and counters
// or capacities no real filter can have, which would print as negative
// numbers in BF.INFO.

// craftedScalable returns the dump header and the full encoding of a
// filter whose first sub-filter has capacity 1,000 at rate 0.01 (the
// issue's example), with edit applied to both (offsets in the dump
// header; the encoding's sub-filter 0 header sits at the same offset) and
// every header and parameter CRC recomputed.
func craftedScalable(t *testing.T, so Growth, edit func(d []byte)) (hdr, enc []byte) {
	t.Helper()
	so.RedisBloom = true
	s, err := NewScalable(1000, 0.02, WithGrowth(so))
	if err != nil {
		t.Fatal(err)
	}
	hdr = s.DumpHeader()
	enc = encodeScalable(t, s)
	edit(hdr)
	edit(enc[:len(hdr)])
	hdr = fixDumpCRCs(hdr)
	fixed := fixDumpCRCs(enc[:len(hdr)])
	enc = append(fixed, enc[len(hdr):]...)
	return hdr, enc
}

func TestScalableHeaderGeometry(t *testing.T) {
	le := binary.LittleEndian
	sub0 := headerSize + scalableParams
	u64 := func(at int, v uint64) func([]byte) { return func(d []byte) { le.PutUint64(d[at:], v) } }
	both := func(fs ...func([]byte)) func([]byte) {
		return func(d []byte) {
			for _, f := range fs {
				f(d)
			}
		}
	}
	cases := []struct {
		name string
		edit func([]byte)
		want []error
	}{
		{"m 512 for 1000 at 0.01", u64(sub0+16, 512), []error{ErrFormat, ErrGeometry}},
		{"m 4096 for 1000 at 0.01", u64(sub0+16, 4096), []error{ErrFormat, ErrGeometry}},
		{"k 1 for 1000 at 0.01", func(d []byte) { le.PutUint32(d[sub0+24:], 1) }, []error{ErrFormat, ErrGeometry}},
		{"capacity 2^64-1", both(u64(32, math.MaxUint64), u64(sub0+32, math.MaxUint64)), []error{ErrFormat}},
		{"capacity 2^62", both(u64(32, 1<<62), u64(sub0+32, 1<<62)), []error{ErrFormat, ErrGeometry}},
		{"expansion 2^64-1", u64(headerSize, math.MaxUint64), []error{ErrFormat}},
		{"expansion MaxExpansion+1", u64(headerSize, MaxExpansion+1), []error{ErrFormat}},
		{"count 2^64-1", both(u64(48, math.MaxUint64), u64(sub0+48, math.MaxUint64)), []error{ErrFormat}},
		{"count 1001", both(u64(48, 1001), u64(sub0+48, 1001)), []error{ErrFormat}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr, enc := craftedScalable(t, Growth{}, c.edit)
			g, err := LoadScalableHeader(hdr)
			if g != nil {
				t.Errorf("LoadScalableHeader accepted it: %+v", g.Info())
			}
			for _, want := range c.want {
				if !errors.Is(err, want) {
					t.Errorf("LoadScalableHeader: %v, want %v", err, want)
				}
				if _, err := LoadScalable(bytes.NewReader(enc)); !errors.Is(err, want) {
					t.Errorf("LoadScalable: %v, want %v", err, want)
				}
			}
		})
	}
	// Controls: the largest expansion, and a count of exactly the
	// capacity, load.
	for name, edit := range map[string]func([]byte){
		"unchanged":              func([]byte) {},
		"expansion MaxExpansion": u64(headerSize, MaxExpansion),
		"count 1000":             both(u64(48, 1000), u64(sub0+48, 1000)),
	} {
		hdr, enc := craftedScalable(t, Growth{}, edit)
		if _, err := LoadScalableHeader(hdr); err != nil {
			t.Errorf("%s: LoadScalableHeader: %v", name, err)
		}
		if _, err := LoadScalable(bytes.NewReader(enc)); err != nil {
			t.Errorf("%s: LoadScalable: %v", name, err)
		}
	}
}

// TestScalableHeaderTotalCapacity: sub-filters whose capacities add up to
// more than 2^63−1 are refused before any is read, each sub-filter's own
// geometry notwithstanding.
func TestScalableHeaderTotalCapacity(t *testing.T) {
	le := binary.LittleEndian
	s := grownScalable(t, 200, Growth{}) // 3 sub-filters: 50, 100, 200
	hdr := s.DumpHeader()
	d := bytes.Clone(hdr)
	le.PutUint64(d[headerSize:], MaxExpansion) // 50, 50·2^32, 50·2^64
	p := d[headerSize : headerSize+scalableParams]
	le.PutUint32(p[60:], crc32.Checksum(p[:60], castagnoli))
	d = fixDumpCRCs(d)
	if _, err := LoadScalableHeader(d); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "2^63-1") {
		t.Errorf("LoadScalableHeader: %v, want ErrFormat for the total capacity", err)
	}
	g := growthRule{n0: 50, s: MaxExpansion, r: 0.5, f: 0.5, p: 0.01}
	if total, ok := g.capacity(2); !ok || total != 50+50<<32 {
		t.Errorf("capacity(2) = %d, %v", total, ok)
	}
	if _, ok := g.capacity(3); ok {
		t.Error("capacity(3) fits an int64")
	}
}

// checkScalableFields fails t if a filter a decoder accepted has a field
// no real filter has: a sub-filter that cannot hold its rate, more items
// than bits or than capacity, an expansion over MaxExpansion, or a total
// that prints negative as an int64.
func checkScalableFields(t *testing.T, s *Scalable) {
	t.Helper()
	info := s.Info()
	rb := s.prm.rb // RedisBloom's chains may hold more items than capacity
	if info.Capacity > math.MaxInt64 || (!rb && info.Items > info.Capacity) || info.Expansion > MaxExpansion {
		t.Fatalf("decoded filter with info %+v", info)
	}
	for i, f := range s.filters() {
		if rb {
			if err := checkRBSub(f.Sizing(), f.ext.n2); err != nil {
				t.Fatalf("RedisBloom sub-filter %d: %v", i, err)
			}
			continue
		}
		if err := f.Sizing().CheckRate(); err != nil || f.Inserted() > f.Bits() {
			t.Fatalf("sub-filter %d: %v, %d items in %d bits", i, err, f.Inserted(), f.Bits())
		}
	}
}

// TestScalableExpansionLimit: what the decoders refuse, NewScalable and
// NewScalablePlan refuse to make.
func TestScalableExpansionLimit(t *testing.T) {
	for _, exp := range []uint64{MaxExpansion + 1, math.MaxUint64} {
		if _, err := NewScalable(100, 0.01, WithExpansion(exp)); err == nil {
			t.Errorf("NewScalable with expansion %d accepted", exp)
		}
		if _, err := NewScalablePlan(100, 0.01, WithExpansion(exp), WithLayout(Blocked)); err == nil {
			t.Errorf("NewScalablePlan with expansion %d accepted", exp)
		}
	}
	s, err := NewScalable(1, 0.01, WithExpansion(MaxExpansion))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScalableHeader(s.DumpHeader()); err != nil {
		t.Errorf("expansion MaxExpansion does not load back: %v", err)
	}
}

// TestFilterCountBound: Union and Intersect keep Inserted at most Bits,
// as the decoders demand of an encoding.
func TestFilterCountBound(t *testing.T) {
	a := newSizedT(t, Sizing{Layout: Classic, N: 1, P: 0.9, Bits: 64, K: 1})
	b := newSizedT(t, Sizing{Layout: Classic, N: 1, P: 0.9, Bits: 64, K: 1})
	for i := range 10_000 {
		b.AddString(string(rune(i)))
	}
	if err := a.Union(b); err != nil {
		t.Fatal(err)
	}
	if a.Inserted() > a.Bits() {
		t.Fatalf("Inserted %d after Union, more than %d bits", a.Inserted(), a.Bits())
	}
	data := mustMarshal(t, a)
	if _, err := Load(bytes.NewReader(data)); err != nil {
		t.Fatalf("a saturated union does not load back: %v", err)
	}
}
