package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// rbHeaderOf is the RedisBloom dump header of a RedisBloom-layout filter
// of capacity 50 at 0.01 with items added (3 sub-filters for 300).
func rbHeaderOf(t testing.TB, items int, g Growth) []byte {
	t.Helper()
	s, err := NewScalable(50, 0.01, WithLayout(RedisBloom), WithGrowth(g))
	if err != nil {
		t.Fatal(err)
	}
	addKeys(t, s, "k", items)
	h, err := s.RedisBloomHeader()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// rbLinkField is the offset of a field of sub-filter i in a header.
func rbLinkField(i, field int) int { return rbChainSize + rbLinkSize*i + field }

// TestLoadRedisBloomHeaderErrors: every check of LoadRedisBloomHeader,
// RedisBloom's own (BF.LOADCHUNK answers "ERR received bad data" to
// them) and Bloomery's limits, fails with its sentinel and a "bloom: "
// message, before allocating; what RedisBloom takes loads and dumps back
// byte for byte.
func TestLoadRedisBloomHeaderErrors(t *testing.T) {
	good := rbHeaderOf(t, 300, Growth{}) // 3 sub-filters: 50, 100, 200
	le := binary.LittleEndian
	total := le.Uint64(good[0:]) // 300 less the false positives met while adding
	if s, err := LoadRedisBloomHeader(good); err != nil || s.NumFilters() != 3 || s.Count() != total {
		t.Fatalf("good header: %v", err)
	}
	edit := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	u32 := func(at int, v uint32) []byte { return edit(func(b []byte) { le.PutUint32(b[at:], v) }) }
	u64 := func(at int, v uint64) []byte { return edit(func(b []byte) { le.PutUint64(b[at:], v) }) }
	f64 := func(at int, v float64) []byte { return u64(at, math.Float64bits(v)) }
	oneLink := rbHeaderOf(t, 10, Growth{NonScaling: true})
	cases := []struct {
		name string
		b    []byte
		opts []Option
		want error
	}{
		{"empty", nil, nil, ErrFormat},
		{"short", good[:19], nil, ErrFormat},
		{"no sub-filters", u32(8, 0), nil, ErrFormat},
		{"trailing byte", append(bytes.Clone(good), 0), nil, ErrFormat},
		{"one link short", good[:len(good)-rbLinkSize], nil, ErrFormat},
		{"2^32-1 sub-filters", u32(8, math.MaxUint32), nil, ErrFormat},
		{"unknown option", u32(12, 5|16), nil, ErrFormat},
		{"n2 above the bits", edit(func(b []byte) { b[rbLinkField(0, 52)] = 10 }), nil, ErrFormat},
		{"n2 64", edit(func(b []byte) { b[rbLinkField(0, 52)] = 64 }), nil, ErrFormat},
		{"total count", u64(0, total+1), nil, ErrFormat},
		{"counts overflow", edit(func(b []byte) {
			le.PutUint64(b[rbLinkField(2, 16):], math.MaxUint64)
			le.PutUint64(b[0:], 149) // 50 + 100 + 2^64−1, modulo 2^64
		}), nil, ErrFormat},
		{"error 0", f64(rbLinkField(0, 24), 0), nil, ErrFormat},
		{"error 1", f64(rbLinkField(0, 24), 1), nil, ErrFormat},
		{"error NaN", f64(rbLinkField(0, 24), math.NaN()), nil, ErrFormat},
		{"bits 0", u64(rbLinkField(0, 8), 0), nil, ErrFormat},
		{"bits not bytes·8", u64(rbLinkField(0, 8), 8), nil, ErrFormat},
		{"bytes·8 wraps to bits", u64(rbLinkField(0, 0), 1<<61|72), nil, ErrFormat}, // 576 bits
		{"hashes", u32(rbLinkField(1, 40), 3), nil, ErrFormat},
		{"bpe NaN", f64(rbLinkField(1, 32), math.NaN()), nil, ErrFormat},
		{"bpe huge", f64(rbLinkField(1, 32), 1e300), nil, ErrFormat},
		// Bloomery's limits.
		{"bits not a multiple of 64", edit(func(b []byte) {
			le.PutUint64(b[rbLinkField(0, 0):], 73)
			le.PutUint64(b[rbLinkField(0, 8):], 584)
		}), nil, ErrInvalidSize},
		{"capacity 0", u64(rbLinkField(1, 44), 0), nil, ErrInvalidCapacity},
		{"1076 sub-filters", func() []byte {
			b := bytes.Clone(oneLink[:rbChainSize])
			le.PutUint32(b[8:], maxRedisBloomLinks+1)
			for range maxRedisBloomLinks + 1 {
				b = append(b, oneLink[rbChainSize:]...)
			}
			le.PutUint64(b[0:], (maxRedisBloomLinks+1)*le.Uint64(oneLink[rbLinkField(0, 16):]))
			return b
		}(), nil, ErrFormat},
		{"capacity 2^64-1", func() []byte {
			b := bytes.Clone(oneLink)
			le.PutUint64(b[rbLinkField(0, 44):], math.MaxUint64)
			return b
		}(), nil, ErrFormat},
		{"over the size limit", good, []Option{WithMaxBytes(100)}, ErrTooLarge},
		{"keyed", good, []Option{WithKey(fuzzKey)}, ErrInvalidLayout},
	}
	for _, c := range cases {
		s, err := LoadRedisBloomHeader(c.b, c.opts...)
		if !errors.Is(err, c.want) || s != nil {
			t.Errorf("%s: (%v, %v), want %v", c.name, s, err, c.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "bloom: ") {
			t.Errorf("%s: %q lacks the package prefix", c.name, err)
		}
	}
	// What RedisBloom takes though its commands never make it: headers
	// made by hand, or by older RedisBloom versions.
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"32-bit hashing", u32(12, rbOptNoRound)},
		{"power-of-two sizing", u32(12, rbOptForce64)},
		{"n2 set", edit(func(b []byte) { b[rbLinkField(0, 52)] = 5 })},
		{"non-scaling with 3", u32(12, 5|rbOptNoScaling)},
		{"growth 0", u32(16, 0)},
		{"bpe not the rate's", edit(func(b []byte) { // still ⌈ln 2·bpe⌉ hashes, off by 1e-9
			bpe := math.Float64frombits(le.Uint64(b[rbLinkField(1, 32):]))
			le.PutUint64(b[rbLinkField(1, 32):], math.Float64bits(bpe*(1+1e-9)))
		})},
		{"capacity off the growth", u64(rbLinkField(1, 44), 99)},
		{"error off the halving", f64(rbLinkField(2, 24), 0.001)},
		{"bits not the capacity's", edit(func(b []byte) {
			le.PutUint64(b[rbLinkField(2, 0):], 1000)
			le.PutUint64(b[rbLinkField(2, 8):], 8000)
		})},
		{"full link not full", edit(func(b []byte) {
			le.PutUint64(b[rbLinkField(0, 16):], 49)
			le.PutUint64(b[0:], total-1)
		})},
		{"last link over capacity", edit(func(b []byte) {
			le.PutUint64(b[0:], total-le.Uint64(b[rbLinkField(2, 16):])+201)
			le.PutUint64(b[rbLinkField(2, 16):], 201)
		})},
		{"no hashes", edit(func(b []byte) {
			le.PutUint64(b[rbLinkField(1, 32):], 0)
			le.PutUint32(b[rbLinkField(1, 40):], 0)
		})},
	} {
		s, err := LoadRedisBloomHeader(c.b)
		if err != nil {
			t.Errorf("%s: %v, want it loaded as RedisBloom loads it", c.name, err)
			continue
		}
		if again, err := s.RedisBloomHeader(); err != nil || !bytes.Equal(again, c.b) {
			t.Errorf("%s: dumps back as %x (%v), not as loaded", c.name, again, err)
		}
		if again := loadDump(t, goDump(t, s)); !bytes.Equal(encodeScalable(t, again), encodeScalable(t, s)) {
			t.Errorf("%s: Bloomery's encoding does not load back the same", c.name)
		}
	}
}

// TestLoadDumpHeaderEither: LoadDumpHeader reads Bloomery's dump header
// and RedisBloom's, and DumpChunk gives each layout's own.
func TestLoadDumpHeaderEither(t *testing.T) {
	for _, l := range []Layout{Blocked, Classic, RedisBloom} {
		s, err := NewScalable(100, 0.01, WithLayout(l))
		if err != nil {
			t.Fatal(err)
		}
		addKeys(t, s, "k", 250)
		_, hdr, err := s.DumpChunk(0)
		if err != nil {
			t.Fatal(err)
		}
		if isOurs := bytes.HasPrefix(hdr, []byte(formatMagic)); isOurs == (l == RedisBloom) {
			t.Errorf("%s: DumpChunk(0) gives Bloomery's header: %v", l, isOurs)
		}
		got := loadDump(t, goDump(t, s))
		if got.Layout() != l || !bytes.Equal(encodeScalable(t, got), encodeScalable(t, s)) {
			t.Errorf("%s: another filter came back", l)
		}
	}
}

// FuzzLoadRedisBloomHeader feeds arbitrary bytes to LoadRedisBloomHeader
// and a chunk to the filter it makes: no panic, every error has a
// sentinel, an accepted header comes back from RedisBloomHeader byte for
// byte and makes an all-zero filter within the size limit, and the chunk
// loads only inside one sub-filter, after which every added item is
// present.
func FuzzLoadRedisBloomHeader(f *testing.F) {
	for _, h := range [][]byte{
		rbHeaderOf(f, 0, Growth{}),
		rbHeaderOf(f, 300, Growth{}),
		rbHeaderOf(f, 40, Growth{NonScaling: true}),
		rbHeaderOf(f, 1000, Growth{Expansion: 1}),
	} {
		f.Add(h, int64(10), []byte("chunk"))
		f.Add(h[:len(h)-1], int64(1), []byte{})
	}
	for _, c := range rbChainCases(f) { // headers made by hand
		f.Add(c.header, int64(9), []byte("\xff\xff\xff\xff\xff\xff\xff\xff"))
	}
	f.Fuzz(func(t *testing.T, data []byte, it int64, chunk []byte) {
		s, err := LoadRedisBloomHeader(data, WithMaxBytes(fuzzMaxBytes))
		if err != nil {
			if s != nil || !(errors.Is(err, ErrFormat) || errors.Is(err, ErrInvalidLayout) || errors.Is(err, ErrTooLarge)) {
				t.Fatalf("(%v, %v): a filter with an error, or an error without a sentinel", s, err)
			}
			return
		}
		checkScalableFields(t, s)
		if again, err := s.RedisBloomHeader(); err != nil || !bytes.Equal(again, data) {
			t.Fatalf("re-dump differs (%v):\n in  %x\n out %x", err, data, again)
		}
		if s.Bytes() > fuzzMaxBytes || (s.TestString("probe") && !anyHashless(s)) {
			t.Fatalf("%d bytes (limit %d), or an all-zero filter with hashes answers true", s.Bytes(), fuzzMaxBytes)
		}
		before := s.PayloadSize()
		if err := s.LoadChunk(it, chunk); err != nil && !errors.Is(err, ErrInvalidSize) {
			t.Fatalf("LoadChunk: %v does not wrap ErrInvalidSize", err)
		}
		if s.PayloadSize() != before {
			t.Fatal("LoadChunk changed the payload's size")
		}
		if _, err := s.AddString("fuzz"); err == nil && !s.TestString("fuzz") {
			t.Fatal("loaded filter lost an item just added")
		}
	})
}

// anyHashless reports whether a sub-filter of s has no hashes (a header
// made by hand): it answers every item present, as RedisBloom's does.
func anyHashless(s *Scalable) bool {
	for _, f := range s.filters() {
		if f.k == 0 {
			return true
		}
	}
	return false
}
