package cuckoo

import (
	"bytes"
	"errors"
	"testing"
)

// Plan describes exactly the filter New makes, and refuses what New
// refuses, with the same error.
func TestPlanIsNewWithoutAllocating(t *testing.T) {
	tests := []struct {
		capacity uint64
		opts     []Option
	}{
		{4, nil},
		{1025, nil},
		{1000, []Option{WithBucketSize(255)}},
		{100, []Option{WithExpansion(3), WithMaxIterations(7)}},
		{100, []Option{WithExpansion(0)}},
		{3, nil},                                   // below twice the bucket size
		{100, []Option{WithBucketSize(0)}},         // invalid
		{1 << 40, []Option{WithMaxBytes(1 << 20)}}, // too large
	}
	for _, tt := range tests {
		in, err := Plan(tt.capacity, tt.opts...)
		f, ferr := New(tt.capacity, tt.opts...)
		if (err == nil) != (ferr == nil) || (err != nil && err.Error() != ferr.Error()) {
			t.Fatalf("Plan(%d) error %v, New error %v", tt.capacity, err, ferr)
		}
		if err != nil {
			continue
		}
		if in != f.Info() || in.Bytes() != f.Bytes() || !bytes.Equal(in.DumpHeader(), f.DumpHeader()) {
			t.Errorf("Plan(%d) = %+v, New's Info %+v", tt.capacity, in, f.Info())
		}
	}
}

// ParseDumpHeader describes the filter LoadDumpHeader makes, counters
// included, and refuses the same headers.
func TestParseDumpHeaderIsLoadDumpHeader(t *testing.T) {
	for _, hdr := range [][]byte{
		dumpHeaderBytes(7, 4, 2, 3, 2, 20, 3),     // expansion taken verbatim: 4, 12, 36 buckets
		dumpHeaderBytes(0, 512, 0, 1, 4, 1, 0),    // one non-growing sub-filter
		dumpHeaderBytes(0, 3, 0, 1, 2, 20, 1),     // buckets not a power of two
		dumpHeaderBytes(0, 4, 0, 2, 2, 20, 0),     // two sub-filters, expansion 0
		dumpHeaderBytes(0, 1<<40, 0, 1, 2, 20, 1), // past the byte limit
		make([]byte, DumpHeaderSize-1),
	} {
		in, err := ParseDumpHeader(hdr, WithMaxBytes(1<<30))
		f, ferr := LoadDumpHeader(hdr, WithMaxBytes(1<<30))
		if (err == nil) != (ferr == nil) || (err != nil && err.Error() != ferr.Error()) {
			t.Fatalf("ParseDumpHeader error %v, LoadDumpHeader error %v", err, ferr)
		}
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrTooLarge) {
				t.Errorf("error %v is neither ErrFormat nor ErrTooLarge", err)
			}
			continue
		}
		if in != f.Info() || !bytes.Equal(in.DumpHeader(), hdr) {
			t.Errorf("ParseDumpHeader = %+v, LoadDumpHeader's Info %+v", in, f.Info())
		}
	}
}
