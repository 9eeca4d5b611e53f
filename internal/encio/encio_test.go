package encio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestAllZero(t *testing.T) {
	for _, tt := range []struct {
		b    []byte
		want bool
	}{
		{nil, true},
		{make([]byte, 17), true},
		{append(make([]byte, 16), 1), false}, // in the tail
		{append([]byte{0, 0, 0, 1}, make([]byte, 12)...), false}, // in a word
	} {
		if got := AllZero(tt.b); got != tt.want {
			t.Errorf("AllZero(%v) = %v", tt.b, got)
		}
	}
}

func TestNoEOF(t *testing.T) {
	if err := NoEOF(io.EOF); err != io.ErrUnexpectedEOF {
		t.Errorf("NoEOF(io.EOF) = %v", err)
	}
	other := errors.New("x")
	if err := NoEOF(other); err != other {
		t.Errorf("NoEOF(other) = %v", err)
	}
}

type counted struct{ io.Reader }

func (counted) Remaining() (int64, bool) { return 7, true }

func TestRemaining(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 10), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Seek(4, io.SeekStart)
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	for _, tt := range []struct {
		name string
		r    io.Reader
		n    int64
		ok   bool
	}{
		{"Remaining method", counted{}, 7, true},
		{"Len", bytes.NewReader(make([]byte, 3)), 3, true},
		{"regular file at offset 4", f, 6, true},
		{"pipe", r, 0, false},
	} {
		if n, ok := Remaining(tt.r); n != tt.n || ok != tt.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tt.name, n, ok, tt.n, tt.ok)
		}
	}
}

func TestMarshal(t *testing.T) {
	b, err := Marshal(bytes.NewReader([]byte("abc")), 3)
	if err != nil || string(b) != "abc" {
		t.Errorf("Marshal: %q, %v", b, err)
	}
}
