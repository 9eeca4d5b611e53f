package bloom

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
)

// The bit array as bytes: byte j holds logical offsets 8j…8j+7, offset o
// in bit 7−(o%8), which is exactly a Redis bitmap (and the payload of the
// encoding). ReadAt and WriteAt copy ranges of it, so a filter can be
// moved to and from other stores in bounded chunks.

// ReadAt copies the bit-array bytes [off, off+len(p)) into p (io.ReaderAt).
// It returns io.EOF when the range ends at or past Bytes(). In a
// WithConcurrent filter each 8-byte word is read atomically.
func (f *Filter) ReadAt(p []byte, off int64) (int, error) {
	size := int64(f.m() / 8)
	if off < 0 {
		return 0, fmt.Errorf("bloom: ReadAt: negative offset %d", off)
	}
	if off >= size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), size-off))
	var buf [8]byte
	for i := 0; i < n; {
		pos := uint64(off) + uint64(i)
		binary.LittleEndian.PutUint64(buf[:], f.word(pos/8))
		i += copy(p[i:n], buf[pos%8:])
	}
	if n < len(p) || off+int64(n) == size {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt replaces the bit-array bytes [off, off+len(p)) with p
// (io.WriterAt); a range past Bytes() is an error and writes nothing. It
// leaves Inserted unchanged. In a WithConcurrent filter each word is
// updated atomically, but a concurrent Add to the same word may be lost:
// write into a filter nobody else uses.
func (f *Filter) WriteAt(p []byte, off int64) (int, error) {
	size := int64(f.m() / 8)
	if off < 0 || off > size || int64(len(p)) > size-off {
		return 0, fmt.Errorf("%w: WriteAt %d bytes at %d of %d", ErrInvalidSize, len(p), off, size)
	}
	for i := 0; i < len(p); {
		pos := uint64(off) + uint64(i)
		w, shift := pos/8, pos%8
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], f.word(w))
		c := copy(buf[shift:], p[i:])
		v := binary.LittleEndian.Uint64(buf[:])
		if f.concurrent {
			atomic.StoreUint64(&f.words()[w], v)
		} else {
			f.words()[w] = v
		}
		i += c
	}
	return len(p), nil
}
