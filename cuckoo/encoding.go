package cuckoo

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/bloomery/bloom/internal/encio"
)

// The Bloomery file encoding of a cuckoo filter, kind 4 of the versioned
// format (docs/FORMAT.md has the byte tables):
//
//	header      64 bytes: the format's header with kind 4, hash 4
//	            (MurmurHash64A, seed 0), m = sub-filters, k = bucket size,
//	            n = buckets of sub-filter 0, count = items; CRC-32C
//	parameters  64 bytes: the 38-byte dump header (DumpHeader), zeros,
//	            and the CRC-32C of the block's first 60 bytes
//	payload     every sub-filter's bucket bytes, oldest first
//	trailer     8 bytes: CRC-32C of the payload, 4 zero bytes

const (
	formatMagic   = "BLOOMERY"
	formatVersion = 1
	blockSize     = 64 // header, parameter block
	trailerSize   = 8
	// Kind is the kind byte of the encoding's header.
	Kind = 4
	// HashID is the hash byte of the encoding's header: MurmurHash64A,
	// seed 0.
	HashID = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodedSize is the length of the filter's encoding in bytes.
func (f *Filter) EncodedSize() int64 { return 2*blockSize + int64(f.bytes) + trailerSize }

// WriteTo writes the filter's encoding to w (io.WriterTo), the
// sub-filters straight from their memory.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	var head [2 * blockSize]byte
	f.putHead(head[:])
	e := encWriter{w: w}
	e.head(head[:])
	for i := range f.subs {
		e.payload(i, f.subs[i].data)
	}
	return e.trailer()
}

// encWriter writes an encoding in its order (head, the sub-filters'
// bytes, trailer), counting the bytes and the payload's CRC; its first
// error sticks, and nothing is written after it.
type encWriter struct {
	w   io.Writer
	n   int64
	crc uint32
	err error
}

// put writes b; what names it in an error (with sub-filter sub, unless
// sub < 0).
func (e *encWriter) put(b []byte, what string, sub int) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(b)
	e.n += int64(n)
	switch {
	case err == nil:
	case sub >= 0:
		e.err = fmt.Errorf("cuckoo: write %s %d: %w", what, sub, err)
	default:
		e.err = fmt.Errorf("cuckoo: write %s: %w", what, err)
	}
}

// head writes the header and parameter block.
func (e *encWriter) head(b []byte) { e.put(b, "header", -1) }

// payload writes bytes of sub-filter i.
func (e *encWriter) payload(i int, b []byte) {
	if e.err == nil {
		e.crc = crc32.Update(e.crc, castagnoli, b)
		e.put(b, "sub-filter", i)
	}
}

// trailer writes the trailer and returns the bytes written and the first
// error.
func (e *encWriter) trailer() (int64, error) {
	var t [trailerSize]byte
	binary.LittleEndian.PutUint32(t[:], e.crc)
	e.put(t[:], "trailer", -1)
	return e.n, e.err
}

// putHead writes the encoding's header and parameter block (2·blockSize
// bytes) of f into b.
func (f *Filter) putHead(b []byte) {
	f.putHeader(b[:blockSize])
	copy(b[blockSize:], f.DumpHeader())
	binary.LittleEndian.PutUint32(b[2*blockSize-4:], crc32.Checksum(b[blockSize:2*blockSize-4], castagnoli))
}

// putHeader writes the 64-byte format header of f into b.
func (f *Filter) putHeader(b []byte) {
	le := binary.LittleEndian
	copy(b, formatMagic)
	le.PutUint16(b[8:], formatVersion)
	b[10], b[11], b[12], b[13] = Kind, 0, HashID, 0
	le.PutUint64(b[16:], uint64(len(f.subs)))
	le.PutUint32(b[24:], uint32(f.bucketSize))
	le.PutUint64(b[32:], f.base)
	le.PutUint64(b[48:], f.items)
	le.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
}

// MarshalBinary returns the filter's encoding (encoding.BinaryMarshaler).
func (f *Filter) MarshalBinary() ([]byte, error) { return encio.Marshal(f, f.EncodedSize()) }

// UnmarshalBinary replaces f with the filter encoded in data
// (encoding.BinaryUnmarshaler), which must hold exactly one encoding, at
// the default size limit. On any error f is unchanged.
func (f *Filter) UnmarshalBinary(data []byte) error {
	r := bytes.NewReader(data)
	g, err := Load(r)
	if err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the filter", ErrFormat, r.Len())
	}
	*f = *g
	return nil
}

// Load decodes a filter from r: exactly one encoding, leaving what
// follows unread. It checks both headers (ErrFormat, ErrChecksum), and
// the sub-filters' size against WithMaxBytes (ErrTooLarge) and, when r
// can tell how many bytes it has left (a Len method, or a regular
// *os.File), against those (ErrFormat), before it allocates; then the
// payload's checksum. Errors from r are wrapped.
func Load(r io.Reader, opts ...Option) (*Filter, error) {
	var head [2 * blockSize]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, fmt.Errorf("%w: reading the headers: %w", ErrFormat, encio.NoEOF(err))
	}
	h, err := parseHeaders(head[:blockSize], head[blockSize:])
	if err != nil {
		return nil, err
	}
	size, err := subBytes(h.buckets, h.expansion, int(h.filters), h.bucketSize)
	if err != nil {
		return nil, err
	}
	c := newConfig(opts)
	if size > c.maxBytes {
		return nil, fmt.Errorf("%w: the sub-filters take %d bytes, more than %d", ErrTooLarge, size, c.maxBytes)
	}
	if left, ok := encio.Remaining(r); ok && uint64(left) < size+trailerSize {
		return nil, fmt.Errorf("%w: truncated: %d bytes of sub-filters and trailer expected, %d left", ErrFormat, size+trailerSize, left)
	}
	f, err := h.filter(c.maxBytes)
	if err != nil {
		return nil, err
	}
	if err := f.readPayload(r); err != nil {
		return nil, err
	}
	return f, nil
}

// parseHeaders checks the format header hb and the parameter block pb,
// and that they agree, and returns the dump header the block holds.
func parseHeaders(hb, pb []byte) (dumpHeader, error) {
	le := binary.LittleEndian
	switch {
	case string(hb[:8]) != formatMagic:
		return dumpHeader{}, fmt.Errorf("%w: bad magic %q", ErrFormat, hb[:8])
	case le.Uint16(hb[8:]) != formatVersion:
		return dumpHeader{}, fmt.Errorf("%w: format version %d, this reader supports %d", ErrFormat, le.Uint16(hb[8:]), formatVersion)
	case crc32.Checksum(hb[:60], castagnoli) != le.Uint32(hb[60:]):
		return dumpHeader{}, fmt.Errorf("%w: header CRC", ErrChecksum)
	case hb[10] != Kind:
		return dumpHeader{}, fmt.Errorf("%w: kind %d, not a cuckoo filter (kind %d)", ErrFormat, hb[10], Kind)
	case hb[11] != 0 || hb[12] != HashID || hb[13] != 0:
		return dumpHeader{}, fmt.Errorf("%w: layout %d, hash %d, flags %d (want 0, %d, 0)", ErrFormat, hb[11], hb[12], hb[13], HashID)
	case !encio.AllZero(hb[14:16]) || !encio.AllZero(hb[28:32]) || !encio.AllZero(hb[40:48]) || !encio.AllZero(hb[56:60]):
		return dumpHeader{}, fmt.Errorf("%w: reserved header bytes are set", ErrFormat)
	case crc32.Checksum(pb[:60], castagnoli) != le.Uint32(pb[60:]):
		return dumpHeader{}, fmt.Errorf("%w: parameter block CRC", ErrChecksum)
	case !encio.AllZero(pb[DumpHeaderSize:60]):
		return dumpHeader{}, fmt.Errorf("%w: reserved parameter bytes are set", ErrFormat)
	}
	h := parseDumpHeader(pb)
	if err := h.check(); err != nil {
		return dumpHeader{}, err
	}
	if le.Uint64(hb[16:]) != h.filters || uint64(le.Uint32(hb[24:])) != h.bucketSize ||
		le.Uint64(hb[32:]) != h.buckets || le.Uint64(hb[48:]) != h.items {
		return dumpHeader{}, fmt.Errorf("%w: the header and the parameter block disagree", ErrFormat)
	}
	return h, nil
}

// readPayload reads the sub-filters' bytes and the trailer from r and
// checks them.
func (f *Filter) readPayload(r io.Reader) error {
	crc := uint32(0)
	for i := range f.subs {
		d := f.subs[i].data
		if _, err := io.ReadFull(r, d); err != nil {
			return fmt.Errorf("%w: reading sub-filter %d: %w", ErrFormat, i, encio.NoEOF(err))
		}
		crc = crc32.Update(crc, castagnoli, d)
	}
	var t [trailerSize]byte
	if _, err := io.ReadFull(r, t[:]); err != nil {
		return fmt.Errorf("%w: reading the trailer: %w", ErrFormat, encio.NoEOF(err))
	}
	if got := binary.LittleEndian.Uint32(t[:]); got != crc {
		return fmt.Errorf("%w: payload CRC %08x, stored %08x", ErrChecksum, crc, got)
	}
	if !encio.AllZero(t[4:]) {
		return fmt.Errorf("%w: reserved trailer bytes are set", ErrFormat)
	}
	return nil
}
