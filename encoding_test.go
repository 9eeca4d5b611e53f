package bloom

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/dchest/siphash"
)

// Tests of the file format (encoding.go, docs/FORMAT.md).

var (
	testKey  = [16]byte{0x42, 0x13, 0x37, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x99}
	otherKey = [16]byte{0x42, 0x13, 0x37, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x98}
)

// variant is one kind of filter: layout x hash x concurrency.
type variant struct {
	layout     Layout
	keyed      bool
	concurrent bool
}

func (v variant) String() string {
	h := "xxh3"
	if v.keyed {
		h = "siphash"
	}
	c := "exclusive"
	if v.concurrent {
		c = "concurrent"
	}
	return fmt.Sprintf("%s/%s/%s", v.layout, h, c)
}

func (v variant) opts() []Option {
	o := []Option{WithLayout(v.layout)}
	if v.keyed {
		o = append(o, WithKey(testKey))
	}
	if v.concurrent {
		o = append(o, WithConcurrent())
	}
	return o
}

func allVariants() []variant {
	var vs []variant
	for _, l := range []Layout{Blocked, Classic} {
		for _, keyed := range []bool{false, true} {
			for _, conc := range []bool{false, true} {
				vs = append(vs, variant{l, keyed, conc})
			}
		}
	}
	return vs
}

func itemKey(buf []byte, i uint64) []byte   { return appendDecimal(append(buf[:0], "item-"...), i) }
func absentKey(buf []byte, i uint64) []byte { return appendDecimal(append(buf[:0], "absent-"...), i) }

// filled returns a filter of variant v for n items at p holding items [0, add).
func filled(t testing.TB, v variant, n uint64, p float64, add int) *Filter {
	t.Helper()
	f, err := New(n, p, v.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	var buf [64]byte
	for i := range uint64(add) {
		f.Add(itemKey(buf[:], i))
	}
	return f
}

func mustMarshal(t testing.TB, f *Filter) []byte {
	t.Helper()
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != f.EncodedSize() {
		t.Fatalf("MarshalBinary: %d bytes, EncodedSize %d", len(b), f.EncodedSize())
	}
	return b
}

// streamOnly hides a reader's Len method, so the decoder cannot tell how
// many bytes are left and must find truncation by reading.
type streamOnly struct{ r io.Reader }

func (s streamOnly) Read(p []byte) (int, error) { return s.r.Read(p) }

// sameFilter fails unless got is an exact copy of want.
func sameFilter(t *testing.T, want, got *Filter, inserted int) {
	t.Helper()
	if got.Bits() != want.Bits() || got.K() != want.K() || got.Cap() != want.Cap() ||
		got.TargetFPR() != want.TargetFPR() || got.Layout() != want.Layout() ||
		got.HashID() != want.HashID() || got.Keyed() != want.Keyed() ||
		got.Inserted() != want.Inserted() || got.Sizing() != want.Sizing() {
		t.Fatalf("decoded filter differs:\n got  %v hash=%s inserted=%d\n want %v hash=%s inserted=%d",
			got.Sizing(), got.HashID(), got.Inserted(), want.Sizing(), want.HashID(), want.Inserted())
	}
	if len(got.words()) != len(want.words()) {
		t.Fatalf("decoded filter has %d words, want %d", len(got.words()), len(want.words()))
	}
	for i := range want.words() {
		if got.word(uint64(i)) != want.word(uint64(i)) {
			t.Fatalf("word %d: got %016x, want %016x", i, got.word(uint64(i)), want.word(uint64(i)))
		}
	}
	var buf [64]byte
	for i := range uint64(inserted) {
		if !got.Test(itemKey(buf[:], i)) {
			t.Fatalf("false negative for item %d after decoding", i)
		}
	}
	diff := 0
	for i := range uint64(100_000) {
		k := absentKey(buf[:], i)
		if got.Test(k) != want.Test(k) {
			diff++
		}
	}
	if diff != 0 {
		t.Fatalf("%d of 100000 absent probes answer differently after decoding", diff)
	}
}

func TestEncodingRoundTrip(t *testing.T) {
	const n, p, add = 20_000, 0.01, 15_000
	type method struct {
		name   string
		decode func(t *testing.T, v variant, data []byte) *Filter
	}
	// receiver is a non-empty filter of another size with v's key and
	// concurrency, which decoding must replace entirely.
	receiver := func(t *testing.T, v variant) *Filter {
		return filled(t, variant{Classic, v.keyed, v.concurrent}, 100, 0.2, 50)
	}
	methods := []method{
		{"ReadFrom", func(t *testing.T, v variant, data []byte) *Filter {
			g := receiver(t, v)
			r := bytes.NewReader(data)
			nr, err := g.ReadFrom(r)
			if err != nil {
				t.Fatal(err)
			}
			if nr != int64(len(data)) || r.Len() != 0 {
				t.Fatalf("ReadFrom read %d bytes (%d left), encoding has %d", nr, r.Len(), len(data))
			}
			return g
		}},
		{"ReadFrom/stream", func(t *testing.T, v variant, data []byte) *Filter {
			g := receiver(t, v)
			nr, err := g.ReadFrom(iotest.HalfReader(streamOnly{bytes.NewReader(data)}))
			if err != nil {
				t.Fatal(err)
			}
			if nr != int64(len(data)) {
				t.Fatalf("ReadFrom read %d bytes, encoding has %d", nr, len(data))
			}
			return g
		}},
		{"UnmarshalBinary", func(t *testing.T, v variant, data []byte) *Filter {
			g := receiver(t, v)
			if err := g.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			return g
		}},
		{"UnmarshalBinary/zero", func(t *testing.T, v variant, data []byte) *Filter {
			if v.keyed || v.concurrent {
				t.Skip("a zero Filter is unkeyed and exclusive")
			}
			var g Filter
			if err := g.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			return &g
		}},
		{"Load", func(t *testing.T, v variant, data []byte) *Filter {
			var opts []Option
			if v.keyed {
				opts = append(opts, WithKey(testKey))
			}
			if v.concurrent {
				opts = append(opts, WithConcurrent())
			}
			opts = append(opts, WithLayout(Classic+Blocked-v.layout)) // ignored
			g, err := Load(bytes.NewReader(data), opts...)
			if err != nil {
				t.Fatal(err)
			}
			return g
		}},
	}
	for _, v := range allVariants() {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			f := filled(t, v, n, p, add)
			var wb bytes.Buffer
			nw, err := f.WriteTo(&wb)
			if err != nil {
				t.Fatal(err)
			}
			data := wb.Bytes()
			if nw != f.EncodedSize() || int64(len(data)) != nw {
				t.Fatalf("WriteTo wrote %d bytes (returned %d), EncodedSize %d", len(data), nw, f.EncodedSize())
			}
			if m := mustMarshal(t, f); !bytes.Equal(m, data) {
				t.Fatal("MarshalBinary and WriteTo disagree")
			}
			for _, m := range methods {
				t.Run(m.name, func(t *testing.T) {
					g := m.decode(t, v, data)
					sameFilter(t, f, g, add)
					if g.Concurrent() != v.concurrent {
						t.Errorf("Concurrent() = %v, want %v", g.Concurrent(), v.concurrent)
					}
					if again := mustMarshal(t, g); !bytes.Equal(again, data) {
						t.Fatal("re-encoding the decoded filter gives different bytes")
					}
					// The decoded filter is fully usable.
					var buf [64]byte
					g.Add(itemKey(buf[:], add))
					if !g.Test(itemKey(buf[:], add)) {
						t.Fatal("decoded filter lost a new item")
					}
				})
			}
		})
	}
}

// A payload larger than the 1 MiB I/O chunk, and not a multiple of it,
// round-trips through every path, including one-byte reads.
func TestEncodingMultiChunk(t *testing.T) {
	for _, conc := range []bool{false, true} {
		t.Run(fmt.Sprint("concurrent=", conc), func(t *testing.T) {
			v := variant{Blocked, false, conc}
			s := Sizing{Layout: Blocked, N: 1_000_000, P: 0.01, Bits: (5<<20 + 512) * 8 / 2, K: 7}
			opts := v.opts()
			f, err := NewSized(s, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var buf [64]byte
			for i := range uint64(200_000) {
				f.Add(itemKey(buf[:], i))
			}
			data := mustMarshal(t, f)
			g, err := Load(iotest.OneByteReader(bytes.NewReader(data)))
			if err != nil {
				t.Fatal(err)
			}
			sameFilter(t, f, g, 200_000)
			g, err = Load(iotest.DataErrReader(streamOnly{bytes.NewReader(data)}))
			if err != nil {
				t.Fatal(err)
			}
			sameFilter(t, f, g, 200_000)
		})
	}
}

// Load reads exactly one encoding, so encodings can be concatenated.
func TestEncodingLoadConcatenated(t *testing.T) {
	a := filled(t, variant{Blocked, false, false}, 1000, 0.01, 500)
	b := filled(t, variant{Classic, false, false}, 3000, 0.001, 10)
	data := append(mustMarshal(t, a), mustMarshal(t, b)...)
	for _, r := range []io.Reader{bytes.NewReader(data), streamOnly{bytes.NewReader(data)}} {
		ga, err := Load(r)
		if err != nil {
			t.Fatal(err)
		}
		gb, err := Load(r)
		if err != nil {
			t.Fatal(err)
		}
		sameFilter(t, a, ga, 500)
		sameFilter(t, b, gb, 10)
		if _, err := Load(r); !errors.Is(err, ErrFormat) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Load at end of input: %v, want ErrFormat wrapping io.ErrUnexpectedEOF", err)
		}
	}
}

// ---- byte layout ------------------------------------------------------------

// The payload is a Redis bitmap: logical offset o is bit 0x80>>(o&7) of
// byte o>>3 (SETBIT numbering, MSB first), and nothing else is set.
func TestEncodingPayloadBitOrder(t *testing.T) {
	for _, l := range []Layout{Blocked, Classic} {
		t.Run(l.String(), func(t *testing.T) {
			for _, conc := range []bool{false, true} {
				f := filled(t, variant{l, false, conc}, 40, 0.01, 0)
				want := make([]byte, f.Bytes())
				for i, item := range []string{"a", "redis", "SETBIT", "x\x00y", ""} {
					h := f.Hash([]byte(item))
					offs := f.Offsets(h, nil)
					if len(offs) != int(f.K()) {
						t.Fatalf("Offsets gave %d offsets, k = %d", len(offs), f.K())
					}
					f.Add([]byte(item))
					data := mustMarshal(t, f)
					payload := data[headerSize : headerSize+f.Bytes()]
					for _, o := range offs {
						if o >= f.Bits() {
							t.Fatalf("offset %d >= m = %d", o, f.Bits())
						}
						if payload[o>>3]&(0x80>>(o&7)) == 0 {
							t.Fatalf("item %q: offset %d is not set at byte %d mask %#02x; payload %x",
								item, o, o>>3, 0x80>>(o&7), payload)
						}
						want[o>>3] |= 0x80 >> (o & 7)
					}
					if !bytes.Equal(payload, want) {
						t.Fatalf("after %d items, payload\n%x\nwant (exactly the offsets' bits)\n%x", i+1, payload, want)
					}
				}
			}
		})
	}
}

// The header fields sit at the documented offsets, and both CRCs are
// CRC-32C (Castagnoli) as documented.
func TestEncodingHeaderFields(t *testing.T) {
	le := binary.LittleEndian
	for _, v := range allVariants() {
		t.Run(v.String(), func(t *testing.T) {
			f := filled(t, v, 1000, 0.02, 321)
			b := mustMarshal(t, f)
			tab := crc32.MakeTable(crc32.Castagnoli)
			checks := []struct {
				name      string
				got, want uint64
			}{
				{"magic", boolU(string(b[0:8]) == "BLOOMERY"), 1},
				{"version", uint64(le.Uint16(b[8:])), 1},
				{"kind", uint64(b[10]), 1},
				{"layout", uint64(b[11]), uint64(v.layout)},
				{"hash", uint64(b[12]), uint64(f.HashID())},
				{"flags", uint64(b[13]), boolU(v.keyed)},
				{"reserved 14..15", uint64(le.Uint16(b[14:])), 0},
				{"m", le.Uint64(b[16:]), f.Bits()},
				{"k", uint64(le.Uint32(b[24:])), uint64(f.K())},
				{"key check nonzero", boolU(le.Uint32(b[28:]) != 0), boolU(v.keyed)},
				{"n", le.Uint64(b[32:]), 1000},
				{"p", le.Uint64(b[40:]), math.Float64bits(0.02)},
				{"count", le.Uint64(b[48:]), f.Inserted()},
				{"reserved 56..59", uint64(le.Uint32(b[56:])), 0},
				{"header CRC", uint64(le.Uint32(b[60:])), uint64(crc32.Checksum(b[:60], tab))},
				{"length", uint64(len(b)), headerSize + f.Bits()/8 + trailerSize},
				{"payload CRC", uint64(le.Uint32(b[len(b)-8:])), uint64(crc32.Checksum(b[64:len(b)-8], tab))},
				{"trailer reserved", uint64(le.Uint32(b[len(b)-4:])), 0},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s: got %#x, want %#x", c.name, c.got, c.want)
				}
			}
			if v.keyed {
				k0, k1 := le.Uint64(testKey[:8]), le.Uint64(testKey[8:])
				h1, _ := siphash.Hash128(k0, k1, []byte("bloomery key check v1"))
				if got, want := le.Uint32(b[28:]), uint32(h1)|1; got != want {
					t.Errorf("key check %08x, want %08x", got, want)
				}
			}
		})
	}
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// specOffsets is the layout as docs/FORMAT.md states it, written
// independently of probe.go and hash.go, so that a change to the hot
// paths that moved bits (and so broke every stored filter) fails here.
func specOffsets(l Layout, m uint64, k uint32, h Hash) []uint64 {
	mix := func(x uint64) uint64 {
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x *= 0xc4ceb9fe1a85ec53
		x ^= x >> 33
		return x
	}
	probe := func(j uint64) uint64 { return mix(h.H2+j*0x9e3779b97f4a7c15) ^ h.H1 }
	mulhi := func(x, n uint64) uint64 { hi, _ := bits.Mul64(x, n); return hi }
	var out []uint64
	if l == Classic {
		for i := range uint64(k) {
			w := h.H1
			switch {
			case i == 1:
				w = h.H2
			case i >= 2:
				w = probe(i)
			}
			out = append(out, mulhi(w, m)^7)
		}
		return out
	}
	base := mulhi(h.H1, m/512) * 512
	w := h.H2
	for i := range uint64(k) {
		if i > 0 && i%7 == 0 {
			w = probe(i / 7)
		}
		out = append(out, base+(w&511^7))
		w >>= 9
	}
	return out
}

func TestEncodingLayoutSpec(t *testing.T) {
	rng := uint64(1)
	next := func() uint64 { // splitmix64
		rng += 0x9e3779b97f4a7c15
		z := rng
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	for _, l := range []Layout{Blocked, Classic} {
		for _, k := range []uint32{1, 6, 7, 8, 14, 15, 30, MaxK} {
			for _, m := range []uint64{512, 1024 * 3, 1 << 20, 123456 * 512} {
				f, err := NewSized(Sizing{Layout: l, N: 1, P: 0.5, Bits: m, K: k})
				if err != nil {
					t.Fatal(err)
				}
				hs := []Hash{{0, 0}, {math.MaxUint64, math.MaxUint64}, {0, math.MaxUint64}}
				for range 200 {
					hs = append(hs, Hash{next(), next()})
				}
				for _, h := range hs {
					want := specOffsets(l, m, k, h)
					if got := f.Offsets(h, nil); !slices.Equal(got, want) {
						t.Fatalf("%s m=%d k=%d h=%x: Offsets %v, documented layout %v", l, m, k, h, got, want)
					}
				}
			}
		}
	}
	// The filter hashes as documented: XXH3-128 (H1 = low half), or
	// SipHash-2-4-128 under the key, and stores exactly those offsets.
	for _, keyed := range []bool{false, true} {
		f := filled(t, variant{Blocked, keyed, false}, 50, 0.01, 0)
		want := make([]byte, f.Bytes())
		for _, item := range []string{"apple", "banana", "cherry"} {
			h := HashString(item)
			if keyed {
				h = KeyedHash(testKey, []byte(item))
			}
			for _, o := range specOffsets(Blocked, f.Bits(), f.K(), h) {
				want[o>>3] |= 0x80 >> (o & 7)
			}
			f.AddString(item)
		}
		if got := mustMarshal(t, f)[headerSize : headerSize+f.Bytes()]; !bytes.Equal(got, want) {
			t.Fatalf("keyed=%v: payload %x, want %x", keyed, got, want)
		}
	}
}

// formatExamples are the filters whose hexdumps docs/FORMAT.md shows.
// The second has the geometry written there (what New(10, 0.01,
// WithKey(key)) made before issue 11; it now takes fewer probes).
func formatExamples(t testing.TB) []*Filter {
	a, err := New(4, 0.01, WithLayout(Classic))
	if err != nil {
		t.Fatal(err)
	}
	var key [16]byte
	for i := range key {
		key[i] = byte(i)
	}
	b, err := NewSized(Sizing{Layout: Blocked, N: 10, P: 0.01, Bits: 512, K: 4}, WithKey(key))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"apple", "banana", "cherry"} {
		a.AddString(s)
		b.AddString(s)
	}
	return []*Filter{a, b}
}

// The hexdumps in docs/FORMAT.md are real: this test regenerates them and
// checks that the document contains them verbatim. It also pins the format:
// a change that alters these bytes is a format change.
func TestFormatDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range formatExamples(t) {
		dump := hex.Dump(mustMarshal(t, f))
		if !strings.Contains(string(doc), dump) {
			t.Errorf("docs/FORMAT.md lacks example %d (%v, offsets %v):\n%s", i+1, f.Sizing(),
				[][]uint64{f.Offsets(f.Hash([]byte("apple")), nil), f.Offsets(f.Hash([]byte("banana")), nil), f.Offsets(f.Hash([]byte("cherry")), nil)}, dump)
		}
	}
}

// ---- errors -------------------------------------------------------------------

// decodeAll decodes data through every entry point (with key, if not nil)
// and returns each one's error. ReadFrom and UnmarshalBinary decode into
// filters that already hold items; when they fail, those must be unchanged.
func decodeAll(t *testing.T, data []byte, key *[16]byte, extra ...Option) map[string]error {
	t.Helper()
	var opts []Option
	if key != nil {
		opts = append(opts, WithKey(*key))
	}
	errs := map[string]error{}
	_, errs["Load"] = Load(bytes.NewReader(data), append(opts, extra...)...)
	_, errs["Load/stream"] = Load(streamOnly{bytes.NewReader(data)}, append(opts, extra...)...)
	if len(extra) > 0 {
		return errs
	}
	for _, conc := range []bool{false, true} {
		recv := func() (*Filter, []byte) {
			o := append(slices.Clip(opts), WithLayout(Classic))
			if conc {
				o = append(o, WithConcurrent())
			}
			f, err := New(200, 0.05, o...)
			if err != nil {
				t.Fatal(err)
			}
			var buf [64]byte
			for i := range uint64(100) {
				f.Add(itemKey(buf[:], i))
			}
			return f, mustMarshal(t, f)
		}
		unchanged := func(name string, f *Filter, before []byte, err error) {
			t.Helper()
			errs[name] = err
			if err == nil {
				return
			}
			var buf [64]byte
			for i := range uint64(100) {
				if !f.Test(itemKey(buf[:], i)) {
					t.Fatalf("%s failed (%v) and lost item %d of its receiver", name, err, i)
				}
			}
			if f.Bits() != uint64(len(before)-headerSize-trailerSize)*8 || f.Concurrent() != conc {
				t.Fatalf("%s failed (%v) and changed its receiver: %v", name, err, f.Sizing())
			}
			if after := mustMarshal(t, f); !bytes.Equal(after, before) {
				t.Fatalf("%s failed (%v) and changed its receiver's encoding", name, err)
			}
		}
		suffix := ""
		if conc {
			suffix = "/concurrent"
		}
		f, before := recv()
		_, err := f.ReadFrom(bytes.NewReader(data))
		unchanged("ReadFrom"+suffix, f, before, err)
		f, before = recv()
		_, err = f.ReadFrom(streamOnly{bytes.NewReader(data)})
		unchanged("ReadFrom/stream"+suffix, f, before, err)
		f, before = recv()
		err = f.UnmarshalBinary(data)
		unchanged("UnmarshalBinary"+suffix, f, before, err)
	}
	return errs
}

// expectAll fails unless every entry point failed with an error matching
// all of want (and, where noneOf is given, none of those).
func expectAll(t *testing.T, errs map[string]error, want []error, noneOf ...error) {
	t.Helper()
	for name, err := range errs {
		if err == nil {
			t.Errorf("%s: no error, want %v", name, want)
			continue
		}
		for _, w := range want {
			if !errors.Is(err, w) {
				t.Errorf("%s: %v, want errors.Is %v", name, err, w)
			}
		}
		for _, w := range noneOf {
			if errors.Is(err, w) {
				t.Errorf("%s: %v, must not be %v", name, err, w)
			}
		}
	}
}

func TestEncodingKeyed(t *testing.T) {
	for _, l := range []Layout{Blocked, Classic} {
		t.Run(l.String(), func(t *testing.T) {
			keyed := mustMarshal(t, filled(t, variant{l, true, false}, 500, 0.01, 100))
			unkeyed := mustMarshal(t, filled(t, variant{l, false, false}, 500, 0.01, 100))
			t.Run("no key", func(t *testing.T) {
				expectAll(t, decodeAll(t, keyed, nil), []error{ErrKeyRequired}, ErrWrongKey)
			})
			t.Run("wrong key", func(t *testing.T) {
				expectAll(t, decodeAll(t, keyed, &otherKey), []error{ErrWrongKey}, ErrKeyRequired)
			})
			t.Run("key for unkeyed", func(t *testing.T) {
				expectAll(t, decodeAll(t, unkeyed, &testKey), []error{ErrWrongKey}, ErrKeyRequired)
			})
			t.Run("right key", func(t *testing.T) {
				for name, err := range decodeAll(t, keyed, &testKey) {
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}
			})
			t.Run("zero key", func(t *testing.T) {
				// The all-zero key is a key like any other.
				f, err := New(100, 0.01, WithLayout(l), WithKey([16]byte{}))
				if err != nil {
					t.Fatal(err)
				}
				f.AddString("x")
				b := mustMarshal(t, f)
				expectAll(t, decodeAll(t, b, nil), []error{ErrKeyRequired})
				expectAll(t, decodeAll(t, b, &testKey), []error{ErrWrongKey})
				g, err := Load(bytes.NewReader(b), WithKey([16]byte{}))
				if err != nil || !g.TestString("x") {
					t.Fatalf("Load with the zero key: %v", err)
				}
			})
		})
	}
}

func TestEncodingTruncated(t *testing.T) {
	for _, v := range []variant{{Blocked, false, false}, {Classic, true, false}} {
		t.Run(v.String(), func(t *testing.T) {
			data := mustMarshal(t, filled(t, v, 5000, 0.01, 1000))
			payload := len(data) - headerSize - trailerSize
			var key *[16]byte
			if v.keyed {
				key = &testKey
			}
			cuts := []struct {
				name string
				n    int
			}{
				{"empty", 0},
				{"1 byte", 1},
				{"mid-magic", 5},
				{"mid-header", 30},
				{"header-1", headerSize - 1},
				{"header only", headerSize},
				{"header+1", headerSize + 1},
				{"mid-payload", headerSize + payload/2},
				{"payload-1", headerSize + payload - 1},
				{"missing trailer", headerSize + payload},
				{"half trailer", headerSize + payload + 4},
				{"one byte short", len(data) - 1},
			}
			for _, c := range cuts {
				t.Run(c.name, func(t *testing.T) {
					expectAll(t, decodeAll(t, data[:c.n:c.n], key), []error{ErrFormat}, ErrChecksum)
				})
			}
		})
	}
}

func TestEncodingCorrupt(t *testing.T) {
	for _, v := range []variant{{Blocked, false, false}, {Classic, true, true}} {
		t.Run(v.String(), func(t *testing.T) {
			data := mustMarshal(t, filled(t, v, 3000, 0.01, 2000))
			var key *[16]byte
			if v.keyed {
				key = &testKey
			}
			flip := func(bit int) []byte {
				c := bytes.Clone(data)
				c[bit/8] ^= 1 << (bit % 8)
				return c
			}
			t.Run("header", func(t *testing.T) {
				for bit := range headerSize * 8 {
					for name, err := range decodeAll(t, flip(bit), key) {
						if !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrFormat) {
							t.Errorf("header bit %d flipped: %s: %v, want ErrChecksum or ErrFormat", bit, name, err)
						}
					}
				}
			})
			t.Run("payload", func(t *testing.T) {
				end := len(data) - trailerSize
				for _, at := range []int{headerSize, headerSize + 1, (headerSize + end) / 2, end - 1} {
					for _, b := range []int{0, 3, 7} {
						expectAll(t, decodeAll(t, flip(8*at+b), key), []error{ErrChecksum})
					}
				}
			})
			t.Run("trailer", func(t *testing.T) {
				for bit := range trailerSize * 8 {
					want := ErrChecksum // the CRC word
					if bit >= 32 {
						want = ErrFormat // the reserved word
					}
					expectAll(t, decodeAll(t, flip(8*(len(data)-trailerSize)+bit), key), []error{want})
				}
			})
			t.Run("trailing bytes", func(t *testing.T) {
				for _, extra := range [][]byte{{0}, []byte("garbage!"), data} {
					d := append(bytes.Clone(data), extra...)
					f := filled(t, variant{Classic, v.keyed, false}, 10, 0.1, 5)
					before := mustMarshal(t, f)
					if err := f.UnmarshalBinary(d); !errors.Is(err, ErrFormat) {
						t.Fatalf("%d trailing bytes: %v, want ErrFormat", len(extra), err)
					}
					if !bytes.Equal(mustMarshal(t, f), before) {
						t.Fatal("failed UnmarshalBinary changed its receiver")
					}
				}
			})
		})
	}
}

// withHeader returns a copy of data with mutate applied to its header and
// the header CRC recomputed, so that the field checks are reached.
func withHeader(data []byte, mutate func(h []byte)) []byte {
	c := bytes.Clone(data)
	mutate(c[:headerSize])
	binary.LittleEndian.PutUint32(c[60:], crc32.Checksum(c[:60], crc32.MakeTable(crc32.Castagnoli)))
	return c
}

func TestEncodingFieldChecks(t *testing.T) {
	le := binary.LittleEndian
	blocked := mustMarshal(t, filled(t, variant{Blocked, false, false}, 1000, 0.01, 100))
	classic := mustMarshal(t, filled(t, variant{Classic, false, false}, 1000, 0.01, 100))
	keyed := mustMarshal(t, filled(t, variant{Blocked, true, false}, 1000, 0.01, 100))
	m := le.Uint64(blocked[16:])
	u8 := func(at int, v byte) func([]byte) { return func(h []byte) { h[at] = v } }
	u16 := func(at int, v uint16) func([]byte) { return func(h []byte) { le.PutUint16(h[at:], v) } }
	u32 := func(at int, v uint32) func([]byte) { return func(h []byte) { le.PutUint32(h[at:], v) } }
	u64 := func(at int, v uint64) func([]byte) { return func(h []byte) { le.PutUint64(h[at:], v) } }
	f64 := func(v float64) func([]byte) { return u64(40, math.Float64bits(v)) }
	cases := []struct {
		name   string
		data   []byte
		key    *[16]byte
		mutate func([]byte)
		want   []error
	}{
		{"bad magic", blocked, nil, func(h []byte) { copy(h, "BLOOMERx") }, []error{ErrFormat}},
		{"zero magic", blocked, nil, func(h []byte) { clear(h[:8]) }, []error{ErrFormat}},
		{"version 0", blocked, nil, u16(8, 0), []error{ErrFormat}},
		{"version 2", blocked, nil, u16(8, 2), []error{ErrFormat}},
		{"version 0xffff", blocked, nil, u16(8, 0xffff), []error{ErrFormat}},
		{"kind 0", blocked, nil, u8(10, 0), []error{ErrFormat}},
		{"kind 2", blocked, nil, u8(10, 2), []error{ErrFormat}},
		{"kind 255", blocked, nil, u8(10, 255), []error{ErrFormat}},
		{"layout 0", blocked, nil, u8(11, 0), []error{ErrFormat, ErrInvalidLayout}},
		{"layout 4", blocked, nil, u8(11, 4), []error{ErrFormat, ErrInvalidLayout}},
		{"layout 255", blocked, nil, u8(11, 255), []error{ErrFormat, ErrInvalidLayout}},
		{"hash 0", blocked, nil, u8(12, 0), []error{ErrFormat}},
		{"hash 3", blocked, nil, u8(12, 3), []error{ErrFormat}},
		{"hash 255", blocked, nil, u8(12, 255), []error{ErrFormat}},
		{"siphash unkeyed", blocked, nil, u8(12, byte(HashSipHash)), []error{ErrFormat}},
		{"xxh3 keyed", keyed, &testKey, u8(12, byte(HashXXH3)), []error{ErrFormat}},
		{"flags 0x02", blocked, nil, u8(13, 2), []error{ErrFormat}},
		{"flags 0x80", keyed, &testKey, u8(13, 0x81), []error{ErrFormat}},
		{"reserved 14", blocked, nil, u8(14, 1), []error{ErrFormat}},
		{"reserved 15", blocked, nil, u8(15, 0x80), []error{ErrFormat}},
		{"reserved 56", blocked, nil, u8(56, 1), []error{ErrFormat}},
		{"reserved 59", blocked, nil, u8(59, 0x80), []error{ErrFormat}},
		{"key check on unkeyed", blocked, nil, u32(28, 0x12345679), []error{ErrFormat}},
		{"key check zero on keyed", keyed, &testKey, u32(28, 0), []error{ErrWrongKey}},
		{"k 0", blocked, nil, u32(24, 0), []error{ErrFormat, ErrInvalidK}},
		{"k MaxK+1", blocked, nil, u32(24, MaxK+1), []error{ErrFormat, ErrInvalidK}},
		{"k 2^32-1", blocked, nil, u32(24, math.MaxUint32), []error{ErrFormat, ErrInvalidK}},
		{"m 0", blocked, nil, u64(16, 0), []error{ErrFormat}},
		{"blocked m 64", blocked, nil, u64(16, 64), []error{ErrFormat}},
		{"blocked m+64", blocked, nil, u64(16, m+64), []error{ErrFormat}},
		{"blocked m+1", blocked, nil, u64(16, m+1), []error{ErrFormat}},
		{"blocked m 2^64-1", blocked, nil, u64(16, math.MaxUint64), []error{ErrFormat}},
		{"blocked m doubled", blocked, nil, u64(16, 2*m), []error{ErrFormat}},
		{"blocked m-512", blocked, nil, u64(16, m-512), []error{ErrChecksum}},
		{"classic m 0", classic, nil, u64(16, 0), []error{ErrFormat}},
		{"classic m 100", classic, nil, u64(16, 100), []error{ErrFormat}},
		{"classic m 32", classic, nil, u64(16, 32), []error{ErrFormat}},
		{"classic m 2^64-1", classic, nil, u64(16, math.MaxUint64), []error{ErrFormat}},
		{"n 0", blocked, nil, u64(32, 0), []error{ErrFormat, ErrInvalidCapacity}},
		{"p 0", blocked, nil, f64(0), []error{ErrFormat, ErrInvalidRate}},
		{"p -0", blocked, nil, f64(math.Copysign(0, -1)), []error{ErrFormat, ErrInvalidRate}},
		{"p 1", blocked, nil, f64(1), []error{ErrFormat, ErrInvalidRate}},
		{"p 1.5", blocked, nil, f64(1.5), []error{ErrFormat, ErrInvalidRate}},
		{"p -0.01", blocked, nil, f64(-0.01), []error{ErrFormat, ErrInvalidRate}},
		{"p NaN", blocked, nil, f64(math.NaN()), []error{ErrFormat, ErrInvalidRate}},
		{"p +Inf", blocked, nil, f64(math.Inf(1)), []error{ErrFormat, ErrInvalidRate}},
		{"p -Inf", blocked, nil, f64(math.Inf(-1)), []error{ErrFormat, ErrInvalidRate}},
		// Geometry that cannot hold its rate (issue 11): the bits sized for
		// 1,000 items at 0.01 declared for 10^6 items or 2^64-1, or for a
		// rate far below, or with k = 64.
		{"n 10^6", blocked, nil, u64(32, 1e6), []error{ErrFormat, ErrGeometry}},
		{"n 2^64-1", blocked, nil, u64(32, math.MaxUint64), []error{ErrFormat, ErrGeometry}},
		{"p 1e-6", blocked, nil, f64(1e-6), []error{ErrFormat, ErrGeometry}},
		{"k MaxK at p 0.01", blocked, nil, u32(24, MaxK), []error{ErrFormat, ErrGeometry}},
		{"classic n 10^6", classic, nil, u64(32, 1e6), []error{ErrFormat, ErrGeometry}},
		{"classic p 2^-52", classic, nil, f64(0x1p-52), []error{ErrFormat, ErrGeometry}},
		// More items reported new than bits to record them.
		{"count m+1", blocked, nil, u64(48, m+1), []error{ErrFormat}},
		{"count 2^64-1", blocked, nil, u64(48, math.MaxUint64), []error{ErrFormat}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectAll(t, decodeAll(t, withHeader(c.data, c.mutate), c.key), c.want)
		})
	}
	// Controls: a recomputed CRC over an unchanged or validly changed
	// header decodes, so the cases above fail for the field alone.
	for _, c := range []struct {
		name   string
		mutate func([]byte)
		check  func(*Filter) bool
	}{
		{"unchanged", func([]byte) {}, func(f *Filter) bool { return f.Cap() == 1000 }},
		{"n 7", u64(32, 7), func(f *Filter) bool { return f.Cap() == 7 }},
		{"p 0.5", f64(0.5), func(f *Filter) bool { return f.TargetFPR() == 0.5 }},
		{"count m", u64(48, m), func(f *Filter) bool { return f.Inserted() == m }},
		{"k MaxK at p 0.9", func(h []byte) { u32(24, MaxK)(h); f64(0.9)(h) }, func(f *Filter) bool { return f.K() == MaxK }},
		{"n 1010, within the margin", u64(32, 1010), func(f *Filter) bool { return f.Cap() == 1010 }},
	} {
		t.Run("control/"+c.name, func(t *testing.T) {
			d := withHeader(blocked, c.mutate)
			for name, err := range decodeAll(t, d, nil) {
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			f, err := Load(bytes.NewReader(d))
			if err != nil || !c.check(f) {
				t.Fatalf("Load: %v, %v", err, f.Sizing())
			}
			if !bytes.Equal(mustMarshal(t, f), d) {
				t.Fatal("re-encoding differs")
			}
		})
	}
}

// bigHeader is a valid-CRC header of a blocked filter of m bits (16 bits
// per item at p = 0.01: a geometry that holds its rate), with no payload
// after it.
func bigHeader(m uint64) []byte {
	h := header{kind: kindFilter, layout: uint8(Blocked), hash: uint8(HashXXH3), m: m, k: 7, n: m / 16, p: 0.01}
	return h.marshal()
}

// allocated runs fn and returns the bytes the heap allocated meanwhile.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestEncodingTooLarge(t *testing.T) {
	const budget = 1 << 20 // far below any size the headers below declare
	for _, c := range []struct {
		name string
		m    uint64
		opts []Option
	}{
		{"2^60 bits", 1 << 60, nil},
		{"2^64-512 bits", math.MaxUint64 &^ 511, nil},
		{"DefaultMaxBytes+64", (DefaultMaxBytes + 64) * 8, nil},
		{"2^60 bits, WithMaxBytes", 1 << 60, []Option{WithMaxBytes(1 << 16)}},
		{"2 MiB, WithMaxBytes 1 MiB", 2 << 20 * 8, []Option{WithMaxBytes(1 << 20)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := bigHeader(c.m)
			expectAll(t, decodeAll(t, data, nil, c.opts...), []error{ErrTooLarge})
			for name, r := range map[string]func() io.Reader{
				"bytes.Reader": func() io.Reader { return bytes.NewReader(data) },
				"stream":       func() io.Reader { return streamOnly{bytes.NewReader(data)} },
			} {
				var err error
				if n := allocated(func() { _, err = Load(r(), c.opts...) }); n > budget || !errors.Is(err, ErrTooLarge) {
					t.Errorf("Load from %s: %v after allocating %d bytes", name, err, n)
				}
			}
			if c.opts != nil {
				return
			}
			var f Filter
			var err error
			if n := allocated(func() { err = f.UnmarshalBinary(data) }); n > budget || !errors.Is(err, ErrTooLarge) {
				t.Errorf("UnmarshalBinary: %v after allocating %d bytes", err, n)
			}
			// Nothing big is allocated either, counted per call.
			if a := testing.AllocsPerRun(5, func() { _, _ = Load(bytes.NewReader(data)) }); a > 20 {
				t.Errorf("Load made %.0f allocations before failing", a)
			}
		})
	}
	// The limit is inclusive: a filter of exactly maxBytes loads.
	f, err := NewSized(Sizing{Layout: Blocked, N: 100, P: 0.01, Bits: 4096 * 8, K: 7})
	if err != nil {
		t.Fatal(err)
	}
	f.AddString("x")
	data := mustMarshal(t, f)
	if _, err := Load(bytes.NewReader(data), WithMaxBytes(4096)); err != nil {
		t.Fatalf("4096-byte filter, WithMaxBytes(4096): %v", err)
	}
	expectAll(t, decodeAll(t, data, nil, WithMaxBytes(4095)), []error{ErrTooLarge})
}

// A header that declares 1 GiB of bits but is followed by a few bytes is
// found truncated before the bit array is allocated, when the reader can
// tell how much is left (bytes.Reader, bytes.Buffer, a regular file).
func TestEncodingTruncatedHuge(t *testing.T) {
	data := append(bigHeader(8<<30), "only a few bytes"...)
	path := filepath.Join(t.TempDir(), "huge.bloom")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	readers := []struct {
		name string
		open func() io.Reader
	}{
		{"bytes.Reader", func() io.Reader { return bytes.NewReader(data) }},
		{"bytes.Buffer", func() io.Reader { return bytes.NewBuffer(data) }},
		{"strings.Reader", func() io.Reader { return strings.NewReader(string(data)) }},
		{"os.File", func() io.Reader {
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { fh.Close() })
			return fh
		}},
	}
	for _, r := range readers {
		t.Run(r.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = Load(r.open()) })
			if !errors.Is(err, ErrFormat) || errors.Is(err, ErrTooLarge) {
				t.Fatalf("Load: %v, want ErrFormat (truncated)", err)
			}
			if n > 1<<20 {
				t.Fatalf("Load allocated %d bytes for a truncated 1 GiB header", n)
			}
		})
	}
	t.Run("UnmarshalBinary", func(t *testing.T) {
		var f Filter
		var err error
		n := allocated(func() { err = f.UnmarshalBinary(data) })
		if !errors.Is(err, ErrFormat) || n > 1<<20 {
			t.Fatalf("UnmarshalBinary: %v after allocating %d bytes", err, n)
		}
	})
}

// ---- I/O errors ---------------------------------------------------------------

var errBroken = errors.New("broken pipe (test)")

// failWriter accepts limit bytes, then fails.
type failWriter struct{ limit int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) <= w.limit {
		w.limit -= len(p)
		return len(p), nil
	}
	n := w.limit
	w.limit = 0
	return n, errBroken
}

// failReader returns the first limit bytes of data, then errBroken.
type failReader struct {
	data  []byte
	limit int
}

func (r *failReader) Read(p []byte) (int, error) {
	if r.limit == 0 {
		return 0, errBroken
	}
	n := copy(p[:min(len(p), r.limit)], r.data)
	r.data, r.limit = r.data[n:], r.limit-n
	return n, nil
}

func TestEncodingIOErrors(t *testing.T) {
	for _, conc := range []bool{false, true} {
		v := variant{Blocked, false, conc}
		f, err := NewSized(Sizing{Layout: Blocked, N: 1000, P: 0.01, Bits: (2<<20 + 4096) * 8, K: 7}, v.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		f.AddString("x")
		data := mustMarshal(t, f)
		limits := []int{0, 1, headerSize - 1, headerSize, headerSize + 1, headerSize + chunkBytes,
			headerSize + chunkBytes + 1, len(data) - trailerSize, len(data) - 1}
		for _, limit := range limits {
			t.Run(fmt.Sprintf("%v/%d", v, limit), func(t *testing.T) {
				n, err := f.WriteTo(&failWriter{limit: limit})
				if !errors.Is(err, errBroken) {
					t.Errorf("WriteTo after %d bytes: %v, want it to wrap the writer's error", limit, err)
				}
				if n != int64(limit) {
					t.Errorf("WriteTo reported %d bytes written, the writer took %d", n, limit)
				}
				_, err = Load(&failReader{data: data, limit: limit})
				if !errors.Is(err, errBroken) {
					t.Errorf("Load after %d bytes: %v, want it to wrap the reader's error", limit, err)
				}
				g := filled(t, variant{Classic, false, conc}, 10, 0.1, 3)
				before := mustMarshal(t, g)
				nr, err := g.ReadFrom(&failReader{data: data, limit: limit})
				if !errors.Is(err, errBroken) || nr != int64(limit) {
					t.Errorf("ReadFrom after %d bytes: (%d, %v), want (%d, the reader's error)", limit, nr, err, limit)
				}
				if !bytes.Equal(mustMarshal(t, g), before) {
					t.Error("failed ReadFrom changed its receiver")
				}
			})
		}
	}
	if _, err := Load(iotest.ErrReader(errBroken)); !errors.Is(err, errBroken) {
		t.Errorf("Load from a failing reader: %v", err)
	}
	if _, err := Load(iotest.TimeoutReader(bytes.NewReader(mustMarshal(t, formatExamples(t)[0])))); !errors.Is(err, iotest.ErrTimeout) {
		t.Errorf("Load from a timing-out reader: %v", err)
	}
}

// A large filter streams through a pipe: WriteTo and Load on both ends.
func TestEncodingPipe64MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB")
	}
	for _, conc := range []bool{false, true} {
		t.Run(fmt.Sprint("concurrent=", conc), func(t *testing.T) {
			v := variant{Blocked, true, conc}
			f, err := NewSized(Sizing{Layout: Blocked, N: 50_000_000, P: 0.01, Bits: 64 << 20 * 8, K: 7}, v.opts()...)
			if err != nil {
				t.Fatal(err)
			}
			var buf [64]byte
			for i := range uint64(100_000) {
				f.Add(itemKey(buf[:], i))
			}
			pr, pw := io.Pipe()
			var wn int64
			go func() {
				var err error
				wn, err = f.WriteTo(pw)
				pw.CloseWithError(err)
			}()
			g, err := Load(pr, WithKey(testKey), WithMaxBytes(64<<20))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pr.Read(buf[:1]); err != io.EOF {
				t.Fatalf("after Load, the pipe has more: %v", err)
			}
			if wn != f.EncodedSize() {
				t.Fatalf("WriteTo wrote %d bytes, want %d", wn, f.EncodedSize())
			}
			if !slices.Equal(g.words(), f.words()) || g.Inserted() != f.Inserted() || g.Sizing() != f.Sizing() {
				t.Fatal("filter changed in the pipe")
			}
			for i := range uint64(100_000) {
				if !g.Test(itemKey(buf[:], i)) {
					t.Fatalf("item %d lost in the pipe", i)
				}
			}
		})
	}
}

// A concurrent filter may be encoded while goroutines add to it: the
// snapshot is self-consistent (its CRC matches the bytes written) and holds
// every item added before WriteTo began.
func TestEncodingConcurrentWriteTo(t *testing.T) {
	for _, l := range []Layout{Blocked, Classic} {
		t.Run(l.String(), func(t *testing.T) {
			f := filled(t, variant{l, false, true}, 300_000, 0.01, 10_000)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range 2 {
				wg.Go(func() {
					var buf [64]byte
					for i := uint64(1_000_000 * (g + 1)); ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						f.Add(itemKey(buf[:], i))
					}
				})
			}
			for range 5 {
				data := mustMarshal(t, f)
				g, err := Load(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				var buf [64]byte
				for i := range uint64(10_000) {
					if !g.Test(itemKey(buf[:], i)) {
						t.Fatalf("snapshot lost item %d", i)
					}
				}
			}
			close(stop)
			wg.Wait()
		})
	}
}
