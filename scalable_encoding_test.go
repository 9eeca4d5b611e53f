package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
)

// grownScalable returns a scalable filter of capacity 50 grown with items
// key0 … key(items−1).
func grownScalable(t testing.TB, items int, so Growth, opts ...Option) *Scalable {
	t.Helper()
	s, err := NewScalable(50, 0.01, append([]Option{WithGrowth(so)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if _, err := s.AddString(fmt.Sprintf("key%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestScalableEncodingRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		items int
		so    Growth
		opts  []Option
	}{
		{"empty", 0, Growth{}, nil},
		{"grown", 1000, Growth{}, nil},
		{"classic", 700, Growth{}, []Option{WithLayout(Classic)}},
		{"keyed", 400, Growth{}, []Option{WithKey(fuzzKey)}},
		{"redisbloom x3", 900, Growth{RedisBloom: true, Expansion: 3}, nil},
		{"nonscaling", 50, Growth{NonScaling: true}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := grownScalable(t, c.items, c.so, c.opts...)
			data, err := s.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			want := s.Info()
			if int64(len(data)) != s.EncodedSize() {
				t.Fatalf("encoded %d bytes, EncodedSize %d", len(data), s.EncodedSize())
			}
			g, err := LoadScalable(bytes.NewReader(data), c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if g.Info() != s.Info() || g.TargetFPR() != s.TargetFPR() {
				t.Fatalf("info %+v, want %+v", g.Info(), s.Info())
			}
			again, _ := g.MarshalBinary()
			if !bytes.Equal(again, data) {
				t.Fatal("re-encoding differs")
			}
			for i := range c.items + 2000 {
				k := fmt.Sprintf("key%d", i)
				if g.TestString(k) != s.TestString(k) {
					t.Fatalf("decoded filter answers %v for %q", g.TestString(k), k)
				}
			}
			// Both keep growing the same way.
			for i := c.items; i < c.items+300; i++ {
				k := fmt.Sprintf("key%d", i)
				n1, e1 := s.AddString(k)
				n2, e2 := g.AddString(k)
				if n1 != n2 || !errors.Is(e2, e1) {
					t.Fatalf("add %q: original (%v, %v), decoded (%v, %v)", k, n1, e1, n2, e2)
				}
			}
			if g.Info() != s.Info() {
				t.Fatalf("after more adds: info %+v, want %+v", g.Info(), s.Info())
			}
			var u Scalable
			if c.name == "keyed" {
				err = u.UnmarshalBinary(data)
				if !errors.Is(err, ErrKeyRequired) {
					t.Fatalf("UnmarshalBinary of a keyed filter into an unkeyed one: %v", err)
				}
				return
			}
			if err := u.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			if u.Info() != want {
				t.Fatalf("UnmarshalBinary: info %+v, want %+v", u.Info(), want)
			}
		})
	}
}

func TestScalableEncodingErrors(t *testing.T) {
	s := grownScalable(t, 200, Growth{})
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	// withParams rewrites the parameter block with a valid CRC.
	withParams := func(edit func(p []byte)) []byte {
		d := bytes.Clone(data)
		p := d[headerSize : headerSize+scalableParams]
		edit(p)
		le.PutUint32(p[60:], crc32.Checksum(p[:60], castagnoli))
		return d
	}
	withHeader := func(edit func(h []byte)) []byte {
		d := bytes.Clone(data)
		edit(d[:headerSize])
		le.PutUint32(d[60:], crc32.Checksum(d[:60], castagnoli))
		return d
	}
	filterEnc, _ := s.filters()[0].MarshalBinary()
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrFormat},
		{"header only", data[:headerSize], ErrFormat},
		{"truncated sub-filter", data[:len(data)-100], ErrFormat},
		{"params flipped", func() []byte { d := bytes.Clone(data); d[headerSize+3] ^= 1; return d }(), ErrChecksum},
		{"payload flipped", func() []byte { d := bytes.Clone(data); d[len(d)-20] ^= 1; return d }(), ErrChecksum},
		{"a Filter", filterEnc, ErrFormat},
		{"tightening 1", withParams(func(p []byte) { le.PutUint64(p[8:], 0x3ff0000000000000) }), ErrFormat},
		{"reserved", withParams(func(p []byte) { p[40] = 1 }), ErrFormat},
		{"nonscaling with 3 filters", withParams(func(p []byte) { le.PutUint64(p[0:], 0) }), ErrFormat},
		{"expansion changed", withParams(func(p []byte) { le.PutUint64(p[0:], 3) }), ErrFormat},
		{"first share changed", withParams(func(p []byte) { le.PutUint64(p[16:], 0x3fe0000000000000) }), ErrFormat},
		{"too many filters", withHeader(func(h []byte) { le.PutUint64(h[16:], 65) }), ErrFormat},
		{"zero filters", withHeader(func(h []byte) { le.PutUint64(h[16:], 0) }), ErrFormat},
		{"count mismatch", withHeader(func(h []byte) { le.PutUint64(h[48:], 7) }), ErrFormat},
		{"capacity changed", withHeader(func(h []byte) { le.PutUint64(h[32:], 51) }), ErrFormat},
		{"k set", withHeader(func(h []byte) { le.PutUint32(h[24:], 1) }), ErrFormat},
	}
	for _, c := range cases {
		_, err := LoadScalable(bytes.NewReader(c.data))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := LoadScalable(bytes.NewReader(data), WithMaxBytes(s.Bytes()-1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("size limit: %v", err)
	}
	if _, err := Load(bytes.NewReader(data)); !errors.Is(err, ErrFormat) {
		t.Errorf("Load of a scalable encoding: %v", err)
	}
	if _, err := LoadScalable(bytes.NewReader(data), WithKey(fuzzKey)); !errors.Is(err, ErrWrongKey) {
		t.Errorf("keyed load of an unkeyed filter: %v", err)
	}
	// The receiver is unchanged on error.
	u := grownScalable(t, 10, Growth{})
	before, _ := u.MarshalBinary()
	if err := u.UnmarshalBinary(data[:len(data)-1]); err == nil {
		t.Fatal("truncated data accepted")
	}
	if after, _ := u.MarshalBinary(); !bytes.Equal(before, after) {
		t.Fatal("UnmarshalBinary changed the receiver on error")
	}
	if err := u.UnmarshalBinary(append(bytes.Clone(data), 0)); !errors.Is(err, ErrFormat) {
		t.Fatalf("trailing byte: %v", err)
	}
}

// TestScalableWriteDuringAdds encodes while other goroutines add: every
// encoding decodes, and holds only whole states.
func TestScalableWriteDuringAdds(t *testing.T) {
	s := grownScalable(t, 0, Growth{}, WithConcurrent())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5000 {
			if _, err := s.AddString(fmt.Sprintf("key%d", i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 20 {
		data, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := LoadScalable(bytes.NewReader(data)); err != nil {
			t.Fatalf("encoding taken during adds does not decode: %v", err)
		}
	}
	<-done
}

func FuzzUnmarshalScalable(f *testing.F) {
	for _, s := range append([]*Scalable{
		grownScalable(f, 0, Growth{}),
		grownScalable(f, 120, Growth{}),
		grownScalable(f, 60, Growth{}, WithKey(fuzzKey)),
		grownScalable(f, 50, Growth{NonScaling: true}, WithLayout(Classic)),
		grownScalable(f, 200, Growth{}, WithLayout(RedisBloom)),
	}, rbChainFilters(f)...) {
		data, err := s.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	for _, data := range goldenV1Files(f) { // version 1: every sub-filter blocked
		f.Add(data)
		f.Add(setVersion(data, formatVersionSmall))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeScalable(t, data)
		// Again with the header's and parameters' CRCs made valid, so
		// mutations reach the field checks.
		if len(data) >= headerSize+scalableParams {
			d, le := bytes.Clone(data), binary.LittleEndian
			le.PutUint32(d[60:], crc32.Checksum(d[:60], castagnoli))
			p := d[headerSize:]
			le.PutUint32(p[60:], crc32.Checksum(p[:60], castagnoli))
			checkDecodeScalable(t, d)
		}
	})
}

func checkDecodeScalable(t *testing.T, data []byte) {
	for _, opts := range [][]Option{{WithMaxBytes(fuzzMaxBytes)}, {WithMaxBytes(fuzzMaxBytes), WithKey(fuzzKey)}} {
		s, err := LoadScalable(bytes.NewReader(data), opts...)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			continue
		}
		checkScalableFields(t, s)
		again, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data[:len(again)]) {
			t.Fatal("re-encoding differs from the input")
		}
		if _, err := s.AddString("fuzz"); err == nil && !s.TestString("fuzz") {
			t.Fatal("decoded filter lost an item just added")
		}
	}
}
