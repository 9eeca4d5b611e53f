package bloom

import (
	"bytes"
	"fmt"
	"io"

	"github.com/bloomery/bloom/internal/encio"
)

// The encoding of a Counting filter is the Filter encoding (encoding.go)
// with kind 3: the same 64-byte header, with layout 2 (classic), m = the
// payload's bits = 4 × the number of counters, and count = Inserted(); the
// payload is the counter words, little-endian, counter i in bits
// 4(i%16) … 4(i%16)+3 of word i/16, that is the low nibble of payload byte
// i/2 for even i and the high nibble for odd i; then the same trailer.
// docs/FORMAT.md, "Kind 3: counting filter", has the details.

func (c *Counting) header() header {
	h := header{
		kind: kindCounting, layout: uint8(Classic), hash: uint8(c.HashID()),
		m: c.m * counterBits, k: c.k, n: c.n, p: c.p, count: c.Inserted(),
	}
	if c.ext.keyed() {
		h.flags, h.keyCheck = flagKeyed, c.ext.check()
	}
	return h
}

// WriteTo writes the filter's encoding to w (io.WriterTo), streaming the
// counters in 1 MiB chunks. On a WithConcurrent filter that others are
// changing, each word is read atomically: the encoding is self-consistent
// but not a point-in-time snapshot.
func (c *Counting) WriteTo(w io.Writer) (int64, error) {
	return writeEncoding(w, c.header(), c.words, c.concurrent)
}

// EncodedSize is the length of the filter's encoding in bytes.
func (c *Counting) EncodedSize() int64 { return headerSize + int64(c.m/2) + trailerSize }

// MarshalBinary returns the filter's encoding (encoding.BinaryMarshaler).
func (c *Counting) MarshalBinary() ([]byte, error) { return encio.Marshal(c, c.EncodedSize()) }

// ReadFrom replaces c with a counting filter decoded from r
// (io.ReaderFrom), reading exactly one encoding. A keyed encoding is read
// with c's key; c's concurrency mode is kept. Sizes are checked against
// DefaultMaxBytes and, when r can tell its length, against the bytes
// left, before allocating. On any error c is left unchanged.
func (c *Counting) ReadFrom(r io.Reader) (int64, error) {
	g, n, err := decodeCounting(r, readerConfig(c.ext, c.concurrent))
	if err != nil {
		return n, err
	}
	*c = *g
	return n, nil
}

// UnmarshalBinary replaces c with the counting filter encoded in data
// (encoding.BinaryUnmarshaler); data must hold exactly one encoding. Keys
// and errors as for ReadFrom.
func (c *Counting) UnmarshalBinary(data []byte) error {
	r := bytes.NewReader(data)
	g := Counting{concurrent: c.concurrent, ext: c.ext}
	if _, err := g.ReadFrom(r); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the counting filter", ErrFormat, r.Len())
	}
	*c = g
	return nil
}

// LoadCounting decodes a counting filter from r. Options: WithKey to read
// a keyed filter, WithMaxBytes to change the size limit (on the counter
// array, m/2 bytes), WithConcurrent for the returned filter; WithLayout is
// ignored. An encoded Filter is refused with ErrFormat (use Load).
func LoadCounting(r io.Reader, opts ...Option) (*Counting, error) {
	c, _, err := decodeCounting(r, newConfig(opts))
	return c, err
}

func decodeCounting(r io.Reader, cfg config) (*Counting, int64, error) {
	h, total, err := readHeader(r, kindCounting)
	if err != nil {
		return nil, total, err
	}
	if err := checkCountingHeader(h); err != nil {
		return nil, total, err
	}
	if err := checkHash(h, cfg); err != nil {
		return nil, total, err
	}
	if err := checkPayloadSize(r, h.m/8, cfg); err != nil {
		return nil, total, err
	}
	c, err := newCounting(h.n, h.p, h.m/counterBits, h.k, cfg)
	if err != nil {
		return nil, total, err
	}
	nr, err := readPayload(r, c.words)
	total += nr
	if err != nil {
		return nil, total, err
	}
	c.setInserted(h.count)
	return c, total, nil
}

// checkCountingHeader checks the geometry of a kind-3 header: what
// NewCounting can make, that is the classic layout, a positive multiple
// of 64 counters (m a multiple of 256 bits), 1 ≤ k ≤ MaxK, n ≥ 1 and
// 0 < p < 1. Every error wraps ErrFormat.
func checkCountingHeader(h header) error {
	var err error
	switch {
	case Layout(h.layout) != Classic:
		err = fmt.Errorf("layout %s, but counting filters are classic (%w)", Layout(h.layout), ErrInvalidLayout)
	case h.m == 0 || h.m%(64*counterBits) != 0:
		err = fmt.Errorf("%d payload bits is not a positive multiple of %d, 64 counters (%w)", h.m, 64*counterBits, ErrInvalidSize)
	case h.k < 1 || h.k > MaxK:
		err = fmt.Errorf("k = %d, want 1..%d (%w)", h.k, MaxK, ErrInvalidK)
	default:
		if e := checkNP(h.n, h.p); e != nil {
			err = fmt.Errorf("n = %d, p = %v (%w)", h.n, h.p, e)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: counting filter: %w", ErrFormat, err)
	}
	return nil
}
