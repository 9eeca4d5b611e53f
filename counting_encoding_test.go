package bloom

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Tests of the counting filter's encoding (counting_encoding.go, kind 3 of
// docs/FORMAT.md).

func mustMarshalCounting(t testing.TB, c *Counting) []byte {
	t.Helper()
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != c.EncodedSize() {
		t.Fatalf("MarshalBinary: %d bytes, EncodedSize %d", len(b), c.EncodedSize())
	}
	return b
}

// filledCounting returns a counting filter of variant v for n items at p
// holding items [0, add), items below add/4 added three times.
func filledCounting(t testing.TB, v countingVariant, n uint64, p float64, add int) *Counting {
	t.Helper()
	c := newCountingT(t, n, p, v.opts()...)
	var buf [64]byte
	for i := range uint64(add) {
		c.Add(itemKey(buf[:], i))
		if i < uint64(add/4) {
			c.Add(itemKey(buf[:], i))
			c.Add(itemKey(buf[:], i))
		}
	}
	return c
}

// sameCounting fails unless got is an exact copy of want.
func sameCounting(t *testing.T, want, got *Counting) {
	t.Helper()
	if got.Counters() != want.Counters() || got.K() != want.K() || got.Cap() != want.Cap() ||
		got.TargetFPR() != want.TargetFPR() || got.HashID() != want.HashID() ||
		got.Keyed() != want.Keyed() || got.Inserted() != want.Inserted() {
		t.Fatalf("decoded filter differs: m=%d k=%d n=%d p=%g %s inserted=%d, want m=%d k=%d n=%d p=%g %s inserted=%d",
			got.Counters(), got.K(), got.Cap(), got.TargetFPR(), got.HashID(), got.Inserted(),
			want.Counters(), want.K(), want.Cap(), want.TargetFPR(), want.HashID(), want.Inserted())
	}
	if !slices.Equal(got.snapshot(), want.snapshot()) {
		t.Fatal("decoded counters differ")
	}
}

func TestCountingEncodingRoundTrip(t *testing.T) {
	for _, wv := range countingVariants {
		for _, conc := range []bool{false, true} {
			rv := countingVariant{wv.keyed, conc}
			t.Run(wv.String()+"->"+rv.String(), func(t *testing.T) {
				c := filledCounting(t, wv, 3000, 0.01, 2000)
				c.RemoveString("item-7") // count is net of removes
				data := mustMarshalCounting(t, c)
				var w bytes.Buffer
				if n, err := c.WriteTo(&w); err != nil || n != c.EncodedSize() || !bytes.Equal(w.Bytes(), data) {
					t.Fatalf("WriteTo: %d bytes, %v; differs from MarshalBinary: %v", n, err, !bytes.Equal(w.Bytes(), data))
				}
				g, err := LoadCounting(bytes.NewReader(data), rv.opts()...)
				if err != nil {
					t.Fatal(err)
				}
				if g.Concurrent() != conc {
					t.Fatalf("LoadCounting: concurrent %v, want %v", g.Concurrent(), conc)
				}
				sameCounting(t, c, g)
				if !bytes.Equal(mustMarshalCounting(t, g), data) {
					t.Fatal("re-encoding differs")
				}
				r := newCountingT(t, 10, 0.1, rv.opts()...)
				if n, err := r.ReadFrom(streamOnly{bytes.NewReader(data)}); err != nil || n != int64(len(data)) {
					t.Fatalf("ReadFrom: %d, %v", n, err)
				}
				sameCounting(t, c, r)
				u := newCountingT(t, 10, 0.1, rv.opts()...)
				if err := u.UnmarshalBinary(data); err != nil {
					t.Fatal(err)
				}
				sameCounting(t, c, u)
				if u.Concurrent() != conc {
					t.Fatal("UnmarshalBinary changed the receiver's concurrency mode")
				}
				var buf [64]byte
				for i := range uint64(2000) {
					if !u.Test(itemKey(buf[:], i)) || (i < 500 && i != 7 && u.Count(itemKey(buf[:], i)) < 3) {
						t.Fatalf("item %d lost after decoding", i)
					}
				}
			})
		}
	}
}

// TestCountingEncodingLayout checks the header fields and the nibble order
// of the payload: counter i is the low nibble of payload byte i/2 for even
// i, the high nibble for odd i.
func TestCountingEncodingLayout(t *testing.T) {
	c := newCountingT(t, 100, 0.01, WithKey(testKey))
	for x := range c.Counters() {
		c.words[x/countersPerWord] |= (x*7 + 3) % 16 << (x % countersPerWord * counterBits)
	}
	c.AddString("a")
	c.AddString("b")
	c.RemoveString("a")
	data := mustMarshalCounting(t, c)
	le := binary.LittleEndian
	for _, f := range []struct {
		name      string
		got, want uint64
	}{
		{"magic", le.Uint64(data), le.Uint64([]byte(formatMagic))},
		{"version", uint64(le.Uint16(data[8:])), 1},
		{"kind", uint64(data[10]), 3},
		{"layout", uint64(data[11]), uint64(Classic)},
		{"hash", uint64(data[12]), uint64(HashSipHash)},
		{"flags", uint64(data[13]), 1},
		{"m", le.Uint64(data[16:]), 4 * c.Counters()},
		{"k", uint64(le.Uint32(data[24:])), uint64(c.K())},
		{"key check", uint64(le.Uint32(data[28:])), uint64(c.ext.check())},
		{"n", le.Uint64(data[32:]), 100},
		{"p", le.Uint64(data[40:]), math.Float64bits(0.01)},
		{"count", le.Uint64(data[48:]), 1},
		{"length", uint64(len(data)), 72 + c.Counters()/2},
	} {
		if f.got != f.want {
			t.Errorf("%s = %d, want %d", f.name, f.got, f.want)
		}
	}
	payload := data[headerSize : len(data)-trailerSize]
	for x := range c.Counters() {
		b := payload[x/2]
		got := uint64(b & 15)
		if x%2 == 1 {
			got = uint64(b >> 4)
		}
		if got != c.counter(x) {
			t.Fatalf("counter %d = %d, payload byte %d = %02x", x, c.counter(x), x/2, b)
		}
	}
}

// decodeAllCounting decodes data through every counting entry point (with
// key, if not nil) and returns each one's error. ReadFrom and
// UnmarshalBinary decode into filters holding items; when they fail,
// those must be unchanged.
func decodeAllCounting(t *testing.T, data []byte, key *[16]byte, extra ...Option) map[string]error {
	t.Helper()
	var opts []Option
	if key != nil {
		opts = append(opts, WithKey(*key))
	}
	errs := map[string]error{}
	_, errs["LoadCounting"] = LoadCounting(bytes.NewReader(data), append(opts, extra...)...)
	_, errs["LoadCounting/stream"] = LoadCounting(streamOnly{bytes.NewReader(data)}, append(opts, extra...)...)
	if len(extra) > 0 {
		return errs
	}
	for _, conc := range []bool{false, true} {
		v := countingVariant{key != nil, conc}
		try := func(name string, decode func(c *Counting) error) {
			r := newCountingT(t, 200, 0.05, opts...)
			if conc {
				r = newCountingT(t, 200, 0.05, append(slices.Clip(opts), WithConcurrent())...)
			}
			r.AddString("kept")
			before := mustMarshalCounting(t, r)
			err := decode(r)
			errs[name+"/"+v.String()] = err
			if err != nil && (!bytes.Equal(mustMarshalCounting(t, r), before) || r.Concurrent() != conc || !r.TestString("kept")) {
				t.Fatalf("%s failed (%v) and changed its receiver", name, err)
			}
		}
		try("ReadFrom", func(c *Counting) error { _, err := c.ReadFrom(bytes.NewReader(data)); return err })
		try("ReadFrom/stream", func(c *Counting) error { _, err := c.ReadFrom(streamOnly{bytes.NewReader(data)}); return err })
		try("UnmarshalBinary", func(c *Counting) error { return c.UnmarshalBinary(data) })
	}
	return errs
}

func TestCountingEncodingTruncated(t *testing.T) {
	for _, v := range []countingVariant{{false, false}, {true, true}} {
		t.Run(v.String(), func(t *testing.T) {
			data := mustMarshalCounting(t, filledCounting(t, v, 2000, 0.01, 1000))
			var key *[16]byte
			if v.keyed {
				key = &testKey
			}
			payload := len(data) - headerSize - trailerSize
			for _, n := range []int{0, 1, 5, 30, headerSize - 1, headerSize, headerSize + 1, headerSize + payload/2,
				headerSize + payload - 1, headerSize + payload, headerSize + payload + 4, len(data) - 1} {
				expectAll(t, decodeAllCounting(t, data[:n:n], key), []error{ErrFormat}, ErrChecksum)
			}
		})
	}
}

func TestCountingEncodingCorrupt(t *testing.T) {
	data := mustMarshalCounting(t, filledCounting(t, countingVariant{true, false}, 2000, 0.01, 1500))
	flip := func(bit int) []byte {
		c := bytes.Clone(data)
		c[bit/8] ^= 1 << (bit % 8)
		return c
	}
	for bit := range headerSize * 8 {
		for name, err := range decodeAllCounting(t, flip(bit), &testKey) {
			if !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrFormat) {
				t.Errorf("header bit %d flipped: %s: %v, want ErrChecksum or ErrFormat", bit, name, err)
			}
		}
	}
	end := len(data) - trailerSize
	for _, at := range []int{headerSize, headerSize + 1, (headerSize + end) / 2, end - 1} {
		for _, b := range []int{0, 4, 7} {
			expectAll(t, decodeAllCounting(t, flip(8*at+b), &testKey), []error{ErrChecksum})
		}
	}
	for bit := range trailerSize * 8 {
		want := ErrChecksum
		if bit >= 32 {
			want = ErrFormat
		}
		expectAll(t, decodeAllCounting(t, flip(8*end+bit), &testKey), []error{want})
	}
	c := newCountingT(t, 10, 0.1, WithKey(testKey))
	if err := c.UnmarshalBinary(append(bytes.Clone(data), 0)); !errors.Is(err, ErrFormat) {
		t.Fatalf("trailing byte: %v, want ErrFormat", err)
	}
}

// TestCountingEncodingKind: a Filter's encoding given to the counting
// decoders, and a counting filter's to Filter's, is refused with ErrFormat
// and an error that names the right loader.
func TestCountingEncodingKind(t *testing.T) {
	for _, l := range []Layout{Classic, Blocked} {
		fdata := mustMarshal(t, filled(t, variant{l, false, false}, 1000, 0.01, 100))
		for name, err := range decodeAllCounting(t, fdata, nil) {
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "a Filter (read it with Load)") {
				t.Errorf("%s of a %s Filter: %v", name, l, err)
			}
		}
	}
	cdata := mustMarshalCounting(t, filledCounting(t, countingVariant{}, 1000, 0.01, 100))
	for name, err := range decodeAll(t, cdata, nil) {
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "LoadCounting") {
			t.Errorf("%s of a Counting filter: %v", name, err)
		}
	}
	t.Log(decodeAll(t, cdata, nil)["Load"])
}

func TestCountingEncodingFieldChecks(t *testing.T) {
	le := binary.LittleEndian
	data := mustMarshalCounting(t, filledCounting(t, countingVariant{}, 1000, 0.01, 100))
	keyed := mustMarshalCounting(t, filledCounting(t, countingVariant{true, false}, 1000, 0.01, 100))
	m := le.Uint64(data[16:])
	u8 := func(at int, v uint8) func([]byte) { return func(h []byte) { h[at] = v } }
	u32 := func(at int, v uint32) func([]byte) { return func(h []byte) { le.PutUint32(h[at:], v) } }
	u64 := func(at int, v uint64) func([]byte) { return func(h []byte) { le.PutUint64(h[at:], v) } }
	for _, c := range []struct {
		name   string
		data   []byte
		key    *[16]byte
		mutate func([]byte)
		want   []error
	}{
		{"kind 1", data, nil, u8(10, 1), []error{ErrFormat}},
		{"kind 2", data, nil, u8(10, 2), []error{ErrFormat}},
		{"kind 4", data, nil, u8(10, 4), []error{ErrFormat}},
		{"layout blocked", data, nil, u8(11, uint8(Blocked)), []error{ErrFormat, ErrInvalidLayout}},
		{"layout 0", data, nil, u8(11, 0), []error{ErrFormat, ErrInvalidLayout}},
		{"m 0", data, nil, u64(16, 0), []error{ErrFormat, ErrInvalidSize}},
		{"m 64 bits", data, nil, u64(16, 64), []error{ErrFormat, ErrInvalidSize}},
		{"m not 256-aligned", data, nil, u64(16, m-128), []error{ErrFormat, ErrInvalidSize}},
		{"m 256 bits short", data, nil, u64(16, m-256), []error{ErrChecksum}}, // the payload's last 8 bytes read as its trailer
		{"m 256 bits long", data, nil, u64(16, m+256), []error{ErrFormat}},
		{"k 0", data, nil, u32(24, 0), []error{ErrFormat, ErrInvalidK}},
		{"k 65", data, nil, u32(24, 65), []error{ErrFormat, ErrInvalidK}},
		{"n 0", data, nil, u64(32, 0), []error{ErrFormat, ErrInvalidCapacity}},
		{"p 0", data, nil, u64(40, 0), []error{ErrFormat, ErrInvalidRate}},
		{"p 1", data, nil, u64(40, math.Float64bits(1)), []error{ErrFormat, ErrInvalidRate}},
		{"p NaN", data, nil, u64(40, math.Float64bits(math.NaN())), []error{ErrFormat, ErrInvalidRate}},
		{"hash 2 unkeyed", data, nil, u8(12, 2), []error{ErrFormat}},
		{"reserved flag", data, nil, u8(13, 2), []error{ErrFormat}},
		{"keyed, no key", keyed, nil, nil, []error{ErrKeyRequired}},
		{"keyed, wrong key", keyed, &otherKey, nil, []error{ErrWrongKey}},
		{"unkeyed, a key", data, &testKey, nil, []error{ErrWrongKey}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := c.data
			if c.mutate != nil {
				d = withHeader(d, c.mutate)
			}
			expectAll(t, decodeAllCounting(t, d, c.key), c.want)
		})
	}
	for name, err := range decodeAllCounting(t, keyed, &testKey) {
		if err != nil {
			t.Errorf("keyed with its key: %s: %v", name, err)
		}
	}
}

func TestCountingEncodingTooLarge(t *testing.T) {
	big := func(m uint64) []byte {
		h := header{kind: kindCounting, layout: uint8(Classic), hash: uint8(HashXXH3), m: m, k: 7, n: 1 << 40, p: 0.01}
		return h.marshal()
	}
	for _, c := range []struct {
		name string
		m    uint64
		opts []Option
	}{
		{"2^62 bits", 1 << 62, nil},
		{"2^64-256 bits", math.MaxUint64 &^ 255, nil},
		{"DefaultMaxBytes+32", (DefaultMaxBytes + 32) * 8, nil},
		{"2 MiB, WithMaxBytes 1 MiB", 2 << 20 * 8, []Option{WithMaxBytes(1 << 20)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			expectAll(t, decodeAllCounting(t, big(c.m), nil, c.opts...), []error{ErrTooLarge})
			var err error
			if n := allocated(func() { _, err = LoadCounting(streamOnly{bytes.NewReader(big(c.m))}, c.opts...) }); n > 1<<20 || !errors.Is(err, ErrTooLarge) {
				t.Fatalf("LoadCounting: %v after allocating %d bytes", err, n)
			}
		})
	}
	// 1 GiB declared, a few bytes present: truncated, found before allocating.
	var err error
	if n := allocated(func() { _, err = LoadCounting(bytes.NewReader(append(big(8<<30), "short"...))) }); n > 1<<20 || !errors.Is(err, ErrFormat) {
		t.Fatalf("truncated 1 GiB: %v after allocating %d bytes", err, n)
	}
	// The limit is inclusive.
	c := newCountingT(t, 1000, 0.01)
	data := mustMarshalCounting(t, c)
	if _, err := LoadCounting(bytes.NewReader(data), WithMaxBytes(c.Bytes())); err != nil {
		t.Fatalf("WithMaxBytes(exactly its size): %v", err)
	}
	expectAll(t, decodeAllCounting(t, data, nil, WithMaxBytes(c.Bytes()-1)), []error{ErrTooLarge})
}

// countingFormatExample is the counting filter whose hexdump
// docs/FORMAT.md shows in "Kind 3: counting filter".
func countingFormatExample(t testing.TB) *Counting {
	c := newCountingT(t, 4, 0.01)
	for _, s := range []string{"apple", "banana", "apple", "cherry"} {
		c.AddString(s)
	}
	c.RemoveString("cherry")
	return c
}

// TestCountingFormatDocExample checks that docs/FORMAT.md contains the
// example's bytes verbatim, as TestFormatDocExample does for Filter.
func TestCountingFormatDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	c := countingFormatExample(t)
	if dump := hex.Dump(mustMarshalCounting(t, c)); !strings.Contains(string(doc), dump) {
		var probes [][]uint64
		for _, s := range []string{"apple", "banana", "cherry"} {
			var buf [MaxK]uint64
			probes = append(probes, slices.Clone(c.probes(c.Hash([]byte(s)), &buf)))
		}
		t.Errorf("docs/FORMAT.md lacks the counting example (m=%d counters, k=%d, counters %v):\n%s", c.Counters(), c.K(), probes, dump)
	}
}
