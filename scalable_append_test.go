package bloom

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// TestScalableAppendBinary: AppendBinary appends exactly MarshalBinary's
// bytes after what b holds, empty and grown, in every kind of filter.
func TestScalableAppendBinary(t *testing.T) {
	for _, tc := range makerCases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewScalable(tc.n0, tc.p, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			for _, items := range []int{0, 3, int(3 * tc.n0)} {
				for i := range items {
					if _, err := s.AddString(fmt.Sprint("item-", i)); err != nil && !errors.Is(err, ErrFull) {
						t.Fatal(err)
					}
				}
				want, err := s.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				prefix := []byte("prefix")
				got, err := s.AppendBinary(prefix)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
					t.Fatalf("%d items, %d sub-filters: AppendBinary differs from MarshalBinary (%d bytes, want %d)",
						items, s.NumFilters(), len(got)-len(prefix), len(want))
				}
			}
		})
	}
}

// TestScalableAppendBinaryAllocs: appending to a buffer with room
// allocates nothing; an empty Scalable has no encoding.
func TestScalableAppendBinaryAllocs(t *testing.T) {
	s, err := NewScalable(100, 0.01, WithRedisBloomSplit())
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf, _ = s.AppendBinary(buf[:0]) }); n != 0 && !raceEnabled {
		t.Fatalf("%v allocations", n) // the race detector's instrumentation allocates
	}
	if _, err := new(Scalable).AppendBinary(nil); !errors.Is(err, ErrFormat) {
		t.Fatalf("empty Scalable: %v", err)
	}
}
