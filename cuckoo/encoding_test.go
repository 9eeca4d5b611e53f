package cuckoo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"testing"
)

// filled is a filter of a few sub-filters with items in them.
func filled(t testing.TB) *Filter {
	f := mustNew(t, 64, WithBucketSize(4), WithExpansion(2), WithMaxIterations(9))
	for i := range 600 {
		if err := f.AddString(fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	f.DeleteString("1")
	return f
}

// An encoding decodes to the same filter, and re-encodes to the same
// bytes.
func TestEncodingRoundTrip(t *testing.T) {
	for _, f := range []*Filter{mustNew(t, 4), filled(t)} {
		b, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != f.EncodedSize() {
			t.Fatalf("%d bytes, EncodedSize %d", len(b), f.EncodedSize())
		}
		var g Filter
		if err := g.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if g.Info() != f.Info() || !sameDump(scanDump(&g), scanDump(f)) {
			t.Fatalf("decoded %+v, encoded %+v", g.Info(), f.Info())
		}
		if b2, _ := g.MarshalBinary(); !bytes.Equal(b, b2) {
			t.Fatal("re-encoding gives other bytes")
		}
		r := io.MultiReader(bytes.NewReader(b), bytes.NewReader([]byte("after")))
		if _, err := Load(r); err != nil {
			t.Fatalf("Load with bytes after the encoding: %v", err)
		}
		if rest, _ := io.ReadAll(r); string(rest) != "after" {
			t.Fatalf("Load read past the encoding: %q left", rest)
		}
	}
}

// fixCRCs recomputes both header CRCs of an encoding.
func fixCRCs(b []byte) {
	le := binary.LittleEndian
	le.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	le.PutUint32(b[124:], crc32.Checksum(b[64:124], castagnoli))
}

// Every malformed encoding is refused with the error that names what is
// wrong, before anything is allocated for it.
func TestLoadRejects(t *testing.T) {
	good, err := filled(t).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	tests := []struct {
		name   string
		change func(b []byte) []byte
		want   error
	}{
		{"empty", func(b []byte) []byte { return nil }, ErrFormat},
		{"cut in the header", func(b []byte) []byte { return b[:100] }, ErrFormat},
		{"cut in the payload", func(b []byte) []byte { return b[:200] }, ErrFormat},
		{"cut in the trailer", func(b []byte) []byte { return b[:len(b)-1] }, ErrFormat},
		{"bytes after", func(b []byte) []byte { return append(b, 0) }, ErrFormat},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }, ErrFormat},
		{"version 2", func(b []byte) []byte { b[8] = 2; fixCRCs(b); return b }, ErrFormat},
		{"header CRC", func(b []byte) []byte { b[50]++; return b }, ErrChecksum},
		{"kind 1", func(b []byte) []byte { b[10] = 1; fixCRCs(b); return b }, ErrFormat},
		{"layout 1", func(b []byte) []byte { b[11] = 1; fixCRCs(b); return b }, ErrFormat},
		{"hash 1", func(b []byte) []byte { b[12] = 1; fixCRCs(b); return b }, ErrFormat},
		{"keyed flag", func(b []byte) []byte { b[13] = 1; fixCRCs(b); return b }, ErrFormat},
		{"reserved header byte", func(b []byte) []byte { b[57] = 1; fixCRCs(b); return b }, ErrFormat},
		{"parameter CRC", func(b []byte) []byte { b[70]++; return b }, ErrChecksum},
		{"reserved parameter byte", func(b []byte) []byte { b[110] = 1; fixCRCs(b); return b }, ErrFormat},
		{"items disagree", func(b []byte) []byte { b[48]++; fixCRCs(b); return b }, ErrFormat},
		{"sub-filters disagree", func(b []byte) []byte { b[16]++; fixCRCs(b); return b }, ErrFormat},
		{"bucket size 0", func(b []byte) []byte { b[24], b[96] = 0, 0; fixCRCs(b); return b }, ErrFormat},
		{"huge sub-filters", func(b []byte) []byte {
			le.PutUint64(b[32:], 1<<50)
			le.PutUint64(b[72:], 1<<50)
			fixCRCs(b)
			return b
		}, ErrTooLarge},
		{"more than is left", func(b []byte) []byte {
			le.PutUint64(b[32:], 1<<20)
			le.PutUint64(b[72:], 1<<20)
			fixCRCs(b)
			return b
		}, ErrFormat},
		{"payload CRC", func(b []byte) []byte { b[130]++; return b }, ErrChecksum},
		{"reserved trailer byte", func(b []byte) []byte { b[len(b)-1] = 1; return b }, ErrFormat},
	}
	for _, tt := range tests {
		b := tt.change(append([]byte(nil), good...))
		var f Filter
		if err := f.UnmarshalBinary(b); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
		if f.subs != nil {
			t.Errorf("%s: a failed UnmarshalBinary changed the receiver", tt.name)
		}
	}
	if _, err := Load(bytes.NewReader(good), WithMaxBytes(100)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a limit below the filter's size: %v", err)
	}
}
