package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"unsafe"
)

// The encoding of a Filter (docs/FORMAT.md has the byte-by-byte table):
//
//	header   64 bytes: magic, version, kind, layout, hash, flags, m, k,
//	         key check, n, p, count, CRC-32C of the header
//	payload  m/8 bytes: the bit array, byte-identical to a Redis bitmap
//	trailer  8 bytes: CRC-32C of the payload, 4 zero bytes
//
// The header and trailer keep the payload 64-byte aligned in a file, so a
// memory-mapped payload is usable in place.

const (
	formatMagic   = "BLOOMERY"
	formatVersion = 1
	headerSize    = 64
	trailerSize   = 8
	kindFilter    = 1
	flagKeyed     = 1
	chunkBytes    = 1 << 20 // payload I/O unit
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// header is the decoded fixed header of an encoded filter.
type header struct {
	kind, layout, hash, flags uint8
	m                         uint64
	k, keyCheck               uint32
	n                         uint64
	p                         float64
	count                     uint64
}

func (h *header) marshal() []byte {
	b := make([]byte, headerSize)
	copy(b, formatMagic)
	le := binary.LittleEndian
	le.PutUint16(b[8:], formatVersion)
	b[10], b[11], b[12], b[13] = h.kind, h.layout, h.hash, h.flags
	le.PutUint64(b[16:], h.m)
	le.PutUint32(b[24:], h.k)
	le.PutUint32(b[28:], h.keyCheck)
	le.PutUint64(b[32:], h.n)
	le.PutUint64(b[40:], math.Float64bits(h.p))
	le.PutUint64(b[48:], h.count)
	le.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return b
}

func parseHeader(b []byte) (header, error) {
	le := binary.LittleEndian
	if string(b[:8]) != formatMagic {
		return header{}, fmt.Errorf("%w: bad magic %q", ErrFormat, b[:8])
	}
	if v := le.Uint16(b[8:]); v != formatVersion {
		return header{}, fmt.Errorf("%w: format version %d, this reader supports %d", ErrFormat, v, formatVersion)
	}
	if got, want := crc32.Checksum(b[:60], castagnoli), le.Uint32(b[60:]); got != want {
		return header{}, fmt.Errorf("%w: header CRC %08x, stored %08x", ErrChecksum, got, want)
	}
	h := header{
		kind: b[10], layout: b[11], hash: b[12], flags: b[13],
		m: le.Uint64(b[16:]), k: le.Uint32(b[24:]), keyCheck: le.Uint32(b[28:]),
		n: le.Uint64(b[32:]), p: math.Float64frombits(le.Uint64(b[40:])), count: le.Uint64(b[48:]),
	}
	if b[14] != 0 || b[15] != 0 || le.Uint32(b[56:]) != 0 || h.flags&^flagKeyed != 0 {
		return header{}, fmt.Errorf("%w: reserved header bits are set", ErrFormat)
	}
	if h.flags&flagKeyed == 0 && h.keyCheck != 0 {
		return header{}, fmt.Errorf("%w: key check %08x on an unkeyed filter", ErrFormat, h.keyCheck)
	}
	return h, nil
}

// WriteTo writes the filter's encoding to w (io.WriterTo). The bit array
// is streamed in 1 MiB chunks, so a large filter needs no second copy.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	h := header{
		kind: kindFilter, layout: uint8(f.layout), hash: uint8(f.HashID()),
		m: f.m, k: f.k, n: f.n, p: f.p, count: f.Inserted(),
	}
	if f.keyed {
		h.flags, h.keyCheck = flagKeyed, keyCheck(f.k0, f.k1)
	}
	n, err := w.Write(h.marshal())
	total := int64(n)
	if err != nil {
		return total, fmt.Errorf("bloom: write header: %w", err)
	}
	crc := uint32(0)
	var buf []byte
	for off := 0; off < len(f.words); off += chunkBytes / 8 {
		words := f.words[off:min(off+chunkBytes/8, len(f.words))]
		var chunk []byte
		if littleEndian && !f.concurrent {
			chunk = wordBytes(words)
		} else {
			if buf == nil {
				buf = make([]byte, 8*min(len(f.words), chunkBytes/8))
			}
			chunk = buf[:8*len(words)]
			for i := range words {
				binary.LittleEndian.PutUint64(chunk[8*i:], f.word(uint64(off+i)))
			}
		}
		crc = crc32.Update(crc, castagnoli, chunk)
		n, err = w.Write(chunk)
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("bloom: write bits: %w", err)
		}
	}
	var t [trailerSize]byte
	binary.LittleEndian.PutUint32(t[:], crc)
	n, err = w.Write(t[:])
	total += int64(n)
	if err != nil {
		return total, fmt.Errorf("bloom: write trailer: %w", err)
	}
	return total, nil
}

// wordBytes views words as their bytes (little-endian hosts only).
func wordBytes(words []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), 8*len(words))
}

// EncodedSize is the length of the filter's encoding in bytes.
func (f *Filter) EncodedSize() int64 { return headerSize + int64(f.m/8) + trailerSize }

// MarshalBinary returns the filter's encoding (encoding.BinaryMarshaler).
func (f *Filter) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(f.EncodedSize()))
	if _, err := f.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ReadFrom replaces f with a filter decoded from r (io.ReaderFrom). It
// reads exactly one encoding and nothing after it. A keyed encoding is
// read with f's current key (so make f with New(…, WithKey(key)) first,
// or use Load). Sizes are checked against DefaultMaxBytes and, when r
// can tell its length, against the bytes left, before allocating. On any
// error f is left unchanged.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	c := config{maxBytes: DefaultMaxBytes, concurrent: f.concurrent}
	if f.keyed {
		c.keyed = true
		binary.LittleEndian.PutUint64(c.key[:8], f.k0)
		binary.LittleEndian.PutUint64(c.key[8:], f.k1)
	}
	g, n, err := decode(r, c)
	if err != nil {
		return n, err
	}
	*f = *g
	return n, nil
}

// UnmarshalBinary replaces f with the filter encoded in data
// (encoding.BinaryUnmarshaler); data must hold exactly one encoding.
// Keys and errors as for ReadFrom.
func (f *Filter) UnmarshalBinary(data []byte) error {
	r := bytes.NewReader(data)
	var g Filter
	g.concurrent, g.keyed, g.k0, g.k1 = f.concurrent, f.keyed, f.k0, f.k1
	if _, err := g.ReadFrom(r); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the filter", ErrFormat, r.Len())
	}
	*f = g
	return nil
}

// Load decodes a filter from r. Options: WithKey to read a keyed filter,
// WithMaxBytes to change the size limit, WithConcurrent for the returned
// filter; WithLayout is ignored (the encoding says).
func Load(r io.Reader, opts ...Option) (*Filter, error) {
	f, _, err := decode(r, newConfig(opts))
	return f, err
}

func decode(r io.Reader, c config) (*Filter, int64, error) {
	var hb [headerSize]byte
	n, err := io.ReadFull(r, hb[:])
	total := int64(n)
	if err != nil {
		return nil, total, fmt.Errorf("%w: reading header: %w", ErrFormat, noEOF(err))
	}
	h, err := parseHeader(hb[:])
	if err != nil {
		return nil, total, err
	}
	if h.kind != kindFilter {
		return nil, total, fmt.Errorf("%w: kind %d is not a Filter", ErrFormat, h.kind)
	}
	s := Sizing{Layout: Layout(h.layout), N: h.n, P: h.p, Bits: h.m, K: h.k}
	if err := checkSizing(s); err != nil {
		if !errors.Is(err, ErrFormat) {
			err = fmt.Errorf("%w: %w", ErrFormat, err)
		}
		return nil, total, fmt.Errorf("bloom: decode: %w", err)
	}
	if err := checkHash(h, c); err != nil {
		return nil, total, err
	}
	if s.Bytes() > c.maxBytes {
		return nil, total, fmt.Errorf("%w: encoded filter has %d bytes, limit %d", ErrTooLarge, s.Bytes(), c.maxBytes)
	}
	if left, ok := remaining(r); ok && left < int64(s.Bytes())+trailerSize {
		return nil, total, fmt.Errorf("%w: truncated: %d bytes of bits and trailer expected, %d left", ErrFormat, s.Bytes()+trailerSize, left)
	}
	f, err := newFilter(s, c)
	if err != nil {
		return nil, total, err
	}
	nr, err := f.readPayload(r)
	total += nr
	if err != nil {
		return nil, total, err
	}
	f.setInserted(h.count)
	return f, total, nil
}

func checkHash(h header, c config) error {
	keyed := h.flags&flagKeyed != 0
	switch {
	case HashID(h.hash) == HashXXH3 && !keyed:
	case HashID(h.hash) == HashSipHash && keyed:
	default:
		return fmt.Errorf("%w: unsupported hash %s (keyed=%v)", ErrFormat, HashID(h.hash), keyed)
	}
	switch {
	case keyed && !c.keyed:
		return ErrKeyRequired
	case !keyed && c.keyed:
		return fmt.Errorf("%w: the filter is not keyed", ErrWrongKey)
	case keyed && keyCheck(keyWords(c.key)) != h.keyCheck:
		return ErrWrongKey
	}
	return nil
}

func (f *Filter) readPayload(r io.Reader) (int64, error) {
	crc, total := uint32(0), int64(0)
	var buf []byte
	for off := 0; off < len(f.words); off += chunkBytes / 8 {
		words := f.words[off:min(off+chunkBytes/8, len(f.words))]
		var chunk []byte
		if littleEndian {
			chunk = wordBytes(words)
		} else {
			if buf == nil {
				buf = make([]byte, 8*min(len(f.words), chunkBytes/8))
			}
			chunk = buf[:8*len(words)]
		}
		n, err := io.ReadFull(r, chunk)
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("%w: reading bits: %w", ErrFormat, noEOF(err))
		}
		crc = crc32.Update(crc, castagnoli, chunk)
		if !littleEndian {
			for i := range words {
				words[i] = binary.LittleEndian.Uint64(chunk[8*i:])
			}
		}
	}
	var t [trailerSize]byte
	n, err := io.ReadFull(r, t[:])
	total += int64(n)
	if err != nil {
		return total, fmt.Errorf("%w: reading trailer: %w", ErrFormat, noEOF(err))
	}
	if stored := binary.LittleEndian.Uint32(t[:]); stored != crc {
		return total, fmt.Errorf("%w: bits CRC %08x, stored %08x", ErrChecksum, crc, stored)
	}
	if binary.LittleEndian.Uint32(t[4:]) != 0 {
		return total, fmt.Errorf("%w: reserved trailer bytes are set", ErrFormat)
	}
	return total, nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// remaining reports how many bytes r has left, when it can tell cheaply.
func remaining(r io.Reader) (int64, bool) {
	switch v := r.(type) {
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
