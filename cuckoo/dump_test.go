package cuckoo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// dumpHeaderBytes is a dump header with the given fields.
func dumpHeaderBytes(items, buckets, deletes, filters uint64, bs, mi, exp uint16) []byte {
	b := make([]byte, DumpHeaderSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], items)
	le.PutUint64(b[8:], buckets)
	le.PutUint64(b[16:], deletes)
	le.PutUint64(b[24:], filters)
	le.PutUint16(b[32:], bs)
	le.PutUint16(b[34:], mi)
	le.PutUint16(b[36:], exp)
	return b
}

// mustLoadHeader is LoadDumpHeader that fails the test on an error.
func mustLoadHeader(t testing.TB, hdr []byte) *Filter {
	t.Helper()
	f, err := LoadDumpHeader(hdr)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The chunks of a scan from 0, and of scans started elsewhere, are
// RedisBloom's (docs/CUCKOO.md §6; observed on RedisBloom 2.8.20).
func TestScanDumpIteratorsMatchRedisBloom(t *testing.T) {
	const mib16 = 16 << 20
	tests := []struct {
		name  string
		hdr   []byte
		start int64
		want  []int64 // iterator, length pairs
	}{
		{"one 64-byte sub-filter", dumpHeaderBytes(1, 32, 0, 1, 2, 20, 1), 0, []int64{1, 38, 65, 64, 0, 0}},
		{"sub-filters 4 to 128 bytes", dumpHeaderBytes(1, 2, 0, 6, 2, 20, 2), 0,
			[]int64{1, 38, 5, 4, 13, 8, 29, 16, 61, 32, 125, 64, 253, 128, 0, 0}},
		{"32 MiB", dumpHeaderBytes(1, 16<<20, 0, 1, 2, 20, 1), 0, []int64{1, 38, 1 + mib16, mib16, 1 + 2*mib16, mib16, 0, 0}},
		{"32 MiB from 100", dumpHeaderBytes(1, 16<<20, 0, 1, 2, 20, 1), 100, []int64{100 + mib16, mib16, 1 + 2*mib16, mib16 - 99, 0, 0}},
		{"2+4 bytes from 2: whole sub-filters", dumpHeaderBytes(1, 1, 0, 2, 2, 20, 2), 2, []int64{4, 2, 8, 4, 0, 0}},
		{"empty: nothing, not even the header", dumpHeaderBytes(0, 32, 0, 1, 2, 20, 1), 0, []int64{0, 0}},
		{"past the end", dumpHeaderBytes(1, 32, 0, 1, 2, 20, 1), 66, []int64{0, 0}},
	}
	for _, tt := range tests {
		f := mustLoadHeader(t, tt.hdr)
		var got []int64
		for it := tt.start; ; {
			next, data := f.ScanDump(it)
			got = append(got, next, int64(len(data)))
			if next == 0 {
				break
			}
			it = next
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: chunks (iterator, length) %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A filter dumped and loaded chunk by chunk is the same filter: the same
// Info, answers and dump.
func TestDumpLoadRoundTrip(t *testing.T) {
	f := mustNew(t, 100, WithBucketSize(3), WithExpansion(2), WithMaxIterations(7))
	for i := range 2000 {
		if err := f.AddString(fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		f.DeleteString(fmt.Sprint(i))
	}
	dump := scanDump(f)
	g := mustLoadHeader(t, dump[0].data)
	for _, c := range dump[1:] {
		if err := g.LoadChunk(c.it, c.data); err != nil {
			t.Fatal(err)
		}
	}
	if f.Info() != g.Info() || !sameDump(scanDump(g), dump) {
		t.Fatalf("loaded %+v, dumped %+v", g.Info(), f.Info())
	}
	for i := range 4000 {
		if s := fmt.Sprint(i); f.CountString(s) != g.CountString(s) || f.TestString(s) != g.TestString(s) {
			t.Fatalf("%s: answers differ after the round trip", s)
		}
	}
}

// LoadDumpHeader checks what RedisBloom 8 checks, and the limits.
func TestLoadDumpHeaderRejects(t *testing.T) {
	tests := []struct {
		name string
		hdr  []byte
		want error
	}{
		{"short", make([]byte, 37), ErrFormat},
		{"long", make([]byte, 39), ErrFormat},
		{"bucket size 0", dumpHeaderBytes(0, 8, 0, 1, 0, 20, 1), ErrFormat},
		{"bucket size 256", dumpHeaderBytes(0, 8, 0, 1, 256, 20, 1), ErrFormat},
		{"no buckets", dumpHeaderBytes(0, 0, 0, 1, 2, 20, 1), ErrFormat},
		{"buckets not a power of two", dumpHeaderBytes(0, 12, 0, 1, 2, 20, 1), ErrFormat},
		{"2^56 buckets", dumpHeaderBytes(0, 1<<56, 0, 1, 2, 20, 1), ErrFormat},
		{"no sub-filters", dumpHeaderBytes(0, 8, 0, 0, 2, 20, 1), ErrFormat},
		{"65536 sub-filters (0 in a u16)", dumpHeaderBytes(0, 8, 0, 65536, 2, 20, 1), ErrFormat},
		{"max iterations 0", dumpHeaderBytes(0, 8, 0, 1, 2, 0, 1), ErrFormat},
		{"expansion 32769", dumpHeaderBytes(0, 8, 0, 1, 2, 20, 32769), ErrFormat},
		{"2 sub-filters, expansion 0", dumpHeaderBytes(0, 8, 0, 2, 2, 20, 0), ErrFormat},
		{"2^55 buckets", dumpHeaderBytes(0, 1<<55, 0, 1, 2, 20, 1), ErrTooLarge},
		{"second sub-filter past 2^56 buckets", dumpHeaderBytes(0, 1<<55, 0, 2, 1, 20, 2), ErrTooLarge},
		{"65535 sub-filters growing", dumpHeaderBytes(0, 1, 0, 65535, 1, 20, 2), ErrTooLarge},
	}
	for _, tt := range tests {
		if _, err := LoadDumpHeader(tt.hdr); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := LoadDumpHeader(dumpHeaderBytes(0, 1024, 0, 2, 2, 20, 1), WithMaxBytes(4095)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("4096 bytes with a limit of 4095: %v", err)
	}
}

// LoadDumpHeader keeps RedisBloom's quirks: the expansion as stored, the
// sub-filter count modulo 65536, the counters as given.
func TestLoadDumpHeaderQuirks(t *testing.T) {
	f := mustLoadHeader(t, dumpHeaderBytes(7, 4, 3, 65536+2, 2, 9, 3))
	want := Info{Size: 40 + 2*16 + 8 + 24, Buckets: 4, Filters: 2, Items: 7, Deleted: 3, BucketSize: 2, Expansion: 3, MaxIterations: 9}
	if f.Info() != want {
		t.Errorf("Info %+v, want %+v", f.Info(), want)
	}
	if !bytes.Equal(f.DumpHeader(), dumpHeaderBytes(7, 4, 3, 2, 2, 9, 3)) {
		t.Errorf("DumpHeader %x", f.DumpHeader())
	}
}

// LoadChunk takes any range inside one sub-filter, wraps past the end
// into the last one as RedisBloom does, and refuses the rest unchanged.
func TestLoadChunk(t *testing.T) {
	tests := []struct {
		name    string
		it      int64
		data    string
		want    error
		sub     int // where the bytes land
		off     int
		filters uint64
	}{
		{"whole sub-filter 0", 9, "abcdefgh", nil, 0, 0, 2},
		{"inside sub-filter 1", 14, "xyz", nil, 1, 2, 2},
		{"end of sub-filter 1", 25, "12345678", nil, 1, 8, 2},
		{"past the end: wraps into the last", 17, "abcdefgh", nil, 0, 0, 1},
		{"crosses sub-filters", 11, "abcdefghij", ErrChunk, 0, 0, 2},
		{"empty", 9, "", ErrChunk, 0, 0, 2},
		{"iterator 0", 0, "a", ErrChunk, 0, 0, 2},
		{"negative iterator", -5, "a", ErrChunk, 0, 0, 2},
		{"iterator before the data", 3, "abcd", ErrChunk, 0, 0, 2},
		{"far past the end", 1 << 40, "abc", ErrChunk, 0, 0, 2},
	}
	for _, tt := range tests {
		f := mustLoadHeader(t, dumpHeaderBytes(1, 4, 0, tt.filters, 2, 20, 2)) // 8 and 16 bytes
		err := f.LoadChunk(tt.it, []byte(tt.data))
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
			continue
		}
		var all []byte
		for _, s := range f.subs {
			all = append(all, s.data...)
		}
		want := make([]byte, len(all))
		if err == nil {
			copy(want[tt.sub*8+tt.off:], tt.data)
		}
		if !bytes.Equal(all, want) {
			t.Errorf("%s: sub-filters %q, want %q", tt.name, all, want)
		}
	}
}
