// Package encio holds the small reading helpers every decoder of the
// module shares (package bloom's files and dumps, package cuckoo's, the
// server's snapshots): whether bytes are all zero, an end of input that
// cuts an encoding short, and how much a reader has left, so that a
// loader checks sizes against the bytes really there before it
// allocates.
package encio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
)

// AllZero reports whether b holds only zero bytes.
func AllZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// NoEOF turns io.EOF into io.ErrUnexpectedEOF: an encoding cut short.
func NoEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Remaining reports how many bytes r has left, when it can tell cheaply:
// a reader that says so itself (a Remaining method), one with Len
// (bytes.Reader, bytes.Buffer, …), or a regular file (its size less the
// offset).
func Remaining(r io.Reader) (int64, bool) {
	switch v := r.(type) {
	case interface{ Remaining() (int64, bool) }:
		return v.Remaining()
	case interface{ Len() int }:
		return int64(v.Len()), true
	case *os.File:
		st, err := v.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return 0, false
		}
		pos, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		return st.Size() - pos, true
	}
	return 0, false
}

// Marshal returns what w writes, size bytes: the MarshalBinary of an
// encoding that knows its size.
func Marshal(w io.WriterTo, size int64) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(size))
	if _, err := w.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
