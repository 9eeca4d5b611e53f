package bloom

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/bloomery/bloom/internal/encio"
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
	// formatVersionRB is the version of encodings in the RedisBloom
	// layout, and only of them: version 1 plus layout 3, hash 3, and the
	// bits per entry in bytes 28–31 and 56–59 (reserved in version 1), so
	// that a version-1 reader refuses such a file as a newer version, not
	// as a corrupt one.
	formatVersionRB = 2
	// formatVersionSmall is the version of a Scalable filter's header
	// (kind 2) in the blocked layout whose small sub-filters are classic
	// (subSizing), and only of it: version 1 there means every sub-filter
	// is blocked, as every writer before the rule made them.
	formatVersionSmall = 3
	headerSize         = 64
	trailerSize        = 8
	kindFilter         = 1
	flagKeyed          = 1
	chunkBytes         = 1 << 20 // payload I/O unit
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
	bpe                       float64 // layout 3 only: bytes 28–31 and 56–59
	n2                        uint8   // layout 3 only: byte 14 (RedisBloom's power-of-two sizing)
	small                     bool    // version 3: a blocked chain with classic small sub-filters
}

func (h *header) marshal() []byte { return h.appendTo(make([]byte, 0, headerSize)) }

// appendTo appends the header's 64 bytes to dst.
func (h *header) appendTo(dst []byte) []byte {
	dst = append(dst, make([]byte, headerSize)...) // no allocation: the compiler extends dst
	b := dst[len(dst)-headerSize:]
	copy(b, formatMagic)
	le := binary.LittleEndian
	le.PutUint16(b[8:], h.version())
	b[10], b[11], b[12], b[13] = h.kind, h.layout, h.hash, h.flags
	le.PutUint64(b[16:], h.m)
	le.PutUint32(b[24:], h.k)
	le.PutUint32(b[28:], h.keyCheck)
	le.PutUint64(b[32:], h.n)
	le.PutUint64(b[40:], math.Float64bits(h.p))
	le.PutUint64(b[48:], h.count)
	if Layout(h.layout) == RedisBloom { // never keyed: the key check's room holds the low half
		bpe := math.Float64bits(h.bpe)
		le.PutUint32(b[28:], uint32(bpe))
		le.PutUint32(b[56:], uint32(bpe>>32))
		b[14] = h.n2
	}
	le.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return dst
}

// version is the format version of an encoding with header h: 2 in the
// RedisBloom layout, 3 for a blocked chain whose small sub-filters are
// classic, else 1.
func (h *header) version() uint16 {
	switch {
	case Layout(h.layout) == RedisBloom:
		return formatVersionRB
	case h.small:
		return formatVersionSmall
	}
	return formatVersion
}

func parseHeader(b []byte) (header, error) {
	le := binary.LittleEndian
	if string(b[:8]) != formatMagic {
		return header{}, fmt.Errorf("%w: bad magic %q", ErrFormat, b[:8])
	}
	if v := le.Uint16(b[8:]); v < formatVersion || v > formatVersionSmall {
		return header{}, fmt.Errorf("%w: format version %d, this reader supports %d to %d", ErrFormat, v, formatVersion, formatVersionSmall)
	}
	if got, want := crc32.Checksum(b[:60], castagnoli), le.Uint32(b[60:]); got != want {
		return header{}, fmt.Errorf("%w: header CRC %08x, stored %08x", ErrChecksum, got, want)
	}
	h := header{
		kind: b[10], layout: b[11], hash: b[12], flags: b[13],
		m: le.Uint64(b[16:]), k: le.Uint32(b[24:]), keyCheck: le.Uint32(b[28:]),
		n: le.Uint64(b[32:]), p: math.Float64frombits(le.Uint64(b[40:])), count: le.Uint64(b[48:]),
	}
	switch v := le.Uint16(b[8:]); {
	case v == formatVersionSmall && (h.kind != kindScalable || Layout(h.layout) != Blocked):
		return header{}, fmt.Errorf("%w: format version %d with kind %d, layout %d (version %d is a scalable filter's in layout 1 and only it)",
			ErrFormat, v, h.kind, h.layout, formatVersionSmall)
	case v == formatVersionSmall:
		h.small = true
	case v != h.version():
		return header{}, fmt.Errorf("%w: format version %d with layout %d (version %d has layout 3 and only it)", ErrFormat, v, h.layout, formatVersionRB)
	}
	if Layout(h.layout) == RedisBloom {
		h.bpe = math.Float64frombits(uint64(le.Uint32(b[56:]))<<32 | uint64(h.keyCheck))
		h.keyCheck, h.n2 = 0, b[14]
		if h.kind != kindFilter && (h.n2 != 0 || le.Uint32(b[28:]) != 0 || le.Uint32(b[56:]) != 0) {
			// bits per entry and power-of-two sizing are a sub-filter's, not a chain's
			return header{}, fmt.Errorf("%w: sub-filter fields (bits per entry, n2) set in a kind-%d header", ErrFormat, h.kind)
		}
	} else if le.Uint32(b[56:]) != 0 || b[14] != 0 {
		return header{}, fmt.Errorf("%w: reserved header bits are set", ErrFormat)
	}
	if b[15] != 0 || h.flags&^flagKeyed != 0 {
		return header{}, fmt.Errorf("%w: reserved header bits are set", ErrFormat)
	}
	if h.flags&flagKeyed == 0 && h.keyCheck != 0 {
		return header{}, fmt.Errorf("%w: key check %08x on an unkeyed filter", ErrFormat, h.keyCheck)
	}
	return h, nil
}

// header is the kind-1 header of f's encoding.
func (f *Filter) header() header {
	h := header{
		kind: kindFilter, layout: uint8(f.layout), hash: uint8(f.HashID()),
		m: f.m(), k: f.k, n: f.n, p: f.p, count: f.Inserted(),
	}
	if f.ext.keyed() {
		h.flags, h.keyCheck = flagKeyed, f.KeyCheck()
	}
	h.bpe = f.ext.bitsPerEntry()
	if f.ext.redisBloom() {
		h.n2 = f.ext.n2
	}
	return h
}

// WriteTo writes the filter's encoding to w (io.WriterTo). The bit array
// is streamed in 1 MiB chunks, so a large filter needs no second copy.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	return writeEncoding(w, f.header(), f.words(), f.concurrent)
}

// writeEncoding writes header h, words as the payload (little-endian
// words, loaded atomically when concurrent) and the trailer. Every kind
// of filter is written through it. The payload is streamed in 1 MiB
// chunks, straight from words on little-endian hosts when not concurrent.
func writeEncoding(w io.Writer, h header, words []uint64, concurrent bool) (int64, error) {
	n, err := w.Write(h.marshal())
	total := int64(n)
	if err != nil {
		return total, fmt.Errorf("bloom: write header: %w", err)
	}
	crc := uint32(0)
	var buf []byte
	for off := 0; off < len(words); off += chunkBytes / 8 {
		part := words[off:min(off+chunkBytes/8, len(words))]
		var chunk []byte
		if littleEndian && !concurrent {
			chunk = wordBytes(part)
		} else {
			if buf == nil {
				buf = make([]byte, 8*min(len(words), chunkBytes/8))
			}
			chunk = buf[:8*len(part)]
			for i := range part {
				var v uint64
				if concurrent {
					v = atomic.LoadUint64(&part[i])
				} else {
					v = part[i]
				}
				binary.LittleEndian.PutUint64(chunk[8*i:], v)
			}
		}
		crc = crc32.Update(crc, castagnoli, chunk)
		n, err = w.Write(chunk)
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("bloom: write payload: %w", err)
		}
	}
	return writeTrailer(w, crc, total)
}

// writeTrailer writes crc, the payload's CRC-32C, as an encoding's
// trailer after the total bytes written so far, and returns the new
// total.
func writeTrailer(w io.Writer, crc uint32, total int64) (int64, error) {
	var t [trailerSize]byte
	n, err := w.Write(appendTrailer(t[:0], crc))
	total += int64(n)
	if err != nil {
		return total, fmt.Errorf("bloom: write trailer: %w", err)
	}
	return total, nil
}

// appendTrailer appends crc, the payload's CRC-32C, as an encoding's
// trailer: the CRC, then zeros to trailerSize bytes.
func appendTrailer(dst []byte, crc uint32) []byte {
	var t [trailerSize]byte
	binary.LittleEndian.PutUint32(t[:], crc)
	return append(dst, t[:]...)
}

// wordBytes views words as their bytes in memory (the little-endian
// encoding only on little-endian hosts).
func wordBytes(words []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), 8*len(words))
}

// EncodedSize is the length of the filter's encoding in bytes.
func (f *Filter) EncodedSize() int64 { return headerSize + int64(f.m()/8) + trailerSize }

// MarshalBinary returns the filter's encoding (encoding.BinaryMarshaler).
func (f *Filter) MarshalBinary() ([]byte, error) { return encio.Marshal(f, f.EncodedSize()) }

// ReadFrom replaces f with a filter decoded from r (io.ReaderFrom). It
// reads exactly one encoding and nothing after it. A keyed encoding is
// read with f's current key (so make f with New(…, WithKey(key)) first,
// or use Load). Sizes are checked against DefaultMaxBytes and, when r
// can tell its length, against the bytes left, before allocating. On any
// error f is left unchanged.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	c := config{maxBytes: DefaultMaxBytes, concurrent: f.concurrent}
	c.keyed, c.key = keyConfig(f.ext)
	g, n, err := decode(r, c)
	if err != nil {
		return n, err
	}
	*f = *g
	return n, nil
}

// readerConfig is the decoding configuration of a receiver with the given
// key and concurrency mode, at the default size limit.
func readerConfig(e *filterExt, concurrent bool) config {
	c := config{maxBytes: DefaultMaxBytes, concurrent: concurrent}
	c.keyed, c.key = keyConfig(e)
	return c
}

// UnmarshalBinary replaces f with the filter encoded in data
// (encoding.BinaryUnmarshaler); data must hold exactly one encoding.
// Keys and errors as for ReadFrom.
func (f *Filter) UnmarshalBinary(data []byte) error {
	r := bytes.NewReader(data)
	var g Filter
	g.concurrent, g.ext = f.concurrent, f.ext
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
	f := new(Filter)
	n, err := decodeInto(f, r, c, false)
	if err != nil {
		return nil, n, err
	}
	return f, n, nil
}

// decodeInto decodes a filter from r into *f (which it may change even
// when it fails); inChain for a sub-filter of a Scalable filter.
func decodeInto(f *Filter, r io.Reader, c config, inChain bool) (int64, error) {
	h, total, err := readHeader(r, kindFilter)
	if err != nil {
		return total, err
	}
	s, err := headerSizing(h, inChain)
	if err != nil {
		return total, fmt.Errorf("bloom: decode: %w", err)
	}
	if err := checkHash(h, c); err != nil {
		return total, err
	}
	if err := checkPayloadSize(r, s.Bytes(), c); err != nil {
		return total, err
	}
	if err := initFilter(f, s, c); err != nil {
		return total, err
	}
	if s.Layout == RedisBloom {
		f.ext = rbExt(HashID(h.hash), s.P, s.BPE, h.n2)
	}
	nr, err := readPayload(r, f.words())
	total += nr
	if err != nil {
		return total, err
	}
	f.setInserted(h.count)
	return total, nil
}

// kindCounting is the header's kind byte of a Counting filter (kind 1 is
// Filter, kind 2 Scalable).
const kindCounting = 3

// kindName names an encoded kind and, for the kinds this package reads,
// its loader, for error messages.
func kindName(kind uint8) string {
	switch kind {
	case kindFilter:
		return "a Filter (read it with Load)"
	case 2:
		return "a Scalable filter"
	case kindCounting:
		return "a Counting filter (read it with LoadCounting)"
	}
	return fmt.Sprintf("of unknown kind %d", kind)
}

// readHeader reads and parses the 64-byte header and checks that it is
// of the wanted kind (else a *KindError).
func readHeader(r io.Reader, kind uint8) (header, int64, error) {
	var hb [headerSize]byte
	h, total, err := readAnyHeader(r, &hb)
	if err == nil && h.kind != kind {
		err = &KindError{Got: Kind(h.kind), Want: Kind(kind)}
	}
	if err != nil {
		return header{}, total, err
	}
	return h, total, nil
}

// readAnyHeader reads the 64-byte header into hb and parses it, whatever
// its kind.
func readAnyHeader(r io.Reader, hb *[headerSize]byte) (header, int64, error) {
	n, err := io.ReadFull(r, hb[:])
	total := int64(n)
	if start := hb[:min(n, len(formatMagic))]; err != nil && !strings.HasPrefix(formatMagic, string(start)) {
		return header{}, total, fmt.Errorf("%w: bad magic %q", ErrFormat, start) // short, and no filter at all
	}
	if err != nil {
		return header{}, total, fmt.Errorf("%w: reading header: %w", ErrFormat, encio.NoEOF(err))
	}
	h, err := parseHeader(hb[:])
	return h, total, err
}

// checkPayloadSize refuses, before anything is allocated, a payload of
// size bytes over c's limit, or longer than what r has left when r can
// tell.
func checkPayloadSize(r io.Reader, size uint64, c config) error {
	if size > c.maxBytes {
		return fmt.Errorf("%w: encoded filter has %d bytes, limit %d", ErrTooLarge, size, c.maxBytes)
	}
	if left, ok := encio.Remaining(r); ok && uint64(left) < size+trailerSize {
		return fmt.Errorf("%w: truncated: %d bytes of payload and trailer expected, %d left", ErrFormat, size+trailerSize, left)
	}
	return nil
}

func checkHash(h header, c config) error {
	keyed := h.flags&flagKeyed != 0
	rb := Layout(h.layout) == RedisBloom
	switch {
	case HashID(h.hash) == HashXXH3 && !keyed && !rb:
	case HashID(h.hash) == HashSipHash && keyed && !rb:
	case (HashID(h.hash) == HashMurmur64A || HashID(h.hash) == HashMurmur2) && !keyed && rb:
	default:
		return fmt.Errorf("%w: unsupported hash %s (keyed=%v) for layout %s", ErrFormat, HashID(h.hash), keyed, Layout(h.layout))
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

// readPayload fills words from the payload in r (little-endian words),
// then reads the trailer and checks the payload CRC.
func readPayload(r io.Reader, words []uint64) (int64, error) {
	crc, total := uint32(0), int64(0)
	// A large bit array (fresh, so all zeros, its pages not yet touched)
	// is read through a buffer, and only the chunks that are not all
	// zeros are copied in: a filter holding few items then costs memory
	// for its set bits only, as it did before it was written out.
	direct := littleEndian && len(words) < lazyWords
	var buf []byte
	for off := 0; off < len(words); off += chunkBytes / 8 {
		part := words[off:min(off+chunkBytes/8, len(words))]
		var chunk []byte
		if direct {
			chunk = wordBytes(part)
		} else {
			if buf == nil {
				buf = make([]byte, 8*min(len(words), chunkBytes/8))
			}
			chunk = buf[:8*len(part)]
		}
		n, err := io.ReadFull(r, chunk)
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("%w: reading payload: %w", ErrFormat, encio.NoEOF(err))
		}
		crc = crc32.Update(crc, castagnoli, chunk)
		if !direct && !encio.AllZero(chunk) {
			for i := range part {
				part[i] = binary.LittleEndian.Uint64(chunk[8*i:])
			}
		}
	}
	var t [trailerSize]byte
	n, err := io.ReadFull(r, t[:])
	total += int64(n)
	if err != nil {
		return total, fmt.Errorf("%w: reading trailer: %w", ErrFormat, encio.NoEOF(err))
	}
	if stored := binary.LittleEndian.Uint32(t[:]); stored != crc {
		return total, fmt.Errorf("%w: payload CRC %08x, stored %08x", ErrChecksum, crc, stored)
	}
	if binary.LittleEndian.Uint32(t[4:]) != 0 {
		return total, fmt.Errorf("%w: reserved trailer bytes are set", ErrFormat)
	}
	return total, nil
}

// lazyWords is the size (in words) from which readPayload leaves zero
// chunks untouched: 4 MiB.
const lazyWords = 4 << 20 / 8
