package bloom

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestReadWriteAt(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		var opts []Option
		if concurrent {
			opts = append(opts, WithConcurrent())
		}
		f, err := New(5000, 0.01, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5000 {
			f.AddString(fmt.Sprintf("k%d", i))
		}
		enc, _ := f.MarshalBinary()
		payload := enc[headerSize : len(enc)-trailerSize]
		// Whole array and odd-sized chunks read back the payload.
		all := make([]byte, f.Bytes()+10)
		n, err := f.ReadAt(all, 0)
		if n != int(f.Bytes()) || err != io.EOF || !bytes.Equal(all[:n], payload) {
			t.Fatalf("ReadAt all: %d, %v", n, err)
		}
		g, _ := NewSized(f.Sizing(), opts...)
		for off := int64(0); off < int64(f.Bytes()); off += 13 {
			chunk := make([]byte, 13)
			n, err := f.ReadAt(chunk, off)
			if n == 0 || (err != nil && err != io.EOF) || !bytes.Equal(chunk[:n], payload[off:off+int64(n)]) {
				t.Fatalf("ReadAt at %d: %d, %v", off, n, err)
			}
			if _, err := g.WriteAt(chunk[:n], off); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 5000 {
			if !g.TestString(fmt.Sprintf("k%d", i)) {
				t.Fatalf("copy lost k%d", i)
			}
		}
		ge, _ := g.MarshalBinary()
		if !bytes.Equal(ge[headerSize:len(ge)-trailerSize], payload) {
			t.Fatal("WriteAt copy differs")
		}
		if _, err := f.ReadAt(make([]byte, 1), int64(f.Bytes())); err != io.EOF {
			t.Errorf("ReadAt at the end: %v", err)
		}
		if _, err := f.ReadAt(make([]byte, 1), -1); err == nil {
			t.Error("negative offset accepted")
		}
		if _, err := g.WriteAt(make([]byte, 2), int64(g.Bytes())-1); !errors.Is(err, ErrInvalidSize) {
			t.Errorf("WriteAt past the end: %v", err)
		}
	}
}

// TestSizingOffsets: offsets from a Sizing match the filter's, and blocked
// offsets share one block.
func TestSizingOffsets(t *testing.T) {
	for _, layout := range []Layout{Blocked, Classic} {
		f, _ := New(10_000, 0.001, WithLayout(layout))
		for i := range 1000 {
			h := HashString(fmt.Sprint(i))
			a, b := f.Offsets(h, nil), f.Sizing().Offsets(h, nil)
			if fmt.Sprint(a) != fmt.Sprint(b) || len(a) != int(f.K()) {
				t.Fatalf("offsets differ: %v %v", a, b)
			}
			for _, o := range a {
				if o >= f.Bits() || (layout == Blocked && o/BlockBits != a[0]/BlockBits) {
					t.Fatalf("%s offset %d out of place (first %d)", layout, o, a[0])
				}
			}
		}
	}
}
