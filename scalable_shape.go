package bloom

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Shapes and states (docs/FORMAT.md, "Shapes and states"). A Scalable
// filter of one sub-filter encodes to 192 bytes of headers (the kind-2
// header, the parameter block, the sub-filter's header), its bit array
// and an 8-byte trailer. Filters made with the same parameters differ in
// those 200 bytes only by their count and the checksums over it: a
// server's default filter (capacity 100, p = 0.01) spends 200 bytes of
// its 352 on them. A file of many such filters can write the headers
// once, as a shape, and each filter as its state: the count and the bit
// array, 160 bytes for that default filter. Decoding a state
// rebuilds the filter's whole encoding and reads it as LoadScalable
// does, so every check of the encoding applies to it.

// ShapeSize is the length of a shape's encoding (Shape.AppendBinary).
const ShapeSize = 2*headerSize + scalableParams

// Shape is what the encoding of a Scalable filter of one sub-filter
// holds besides its count and bit array. Shapes are comparable: filters
// made with the same parameters (and key) have equal shapes, and equal
// shapes encode to the same bytes, so a writer can keep the shapes it
// wrote in a map.
type Shape struct {
	prm       *growthParams // interned: filters made alike share it
	head, sub header        // the kind-2 header and the sub-filter's, count 0
}

// AppendState appends the filter's state to b (its count, u64
// little-endian, then its bit array as the encoding's payload), and
// returns its shape. A filter of more than one sub-filter has no state:
// ok is false and b is returned as it was. Adds wait while it runs, so
// the count and the bits are of one moment.
func (s *Scalable) AppendState(b []byte) (sh Shape, _ []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.filters()
	if len(fs) != 1 {
		return Shape{}, b, false
	}
	f := fs[0]
	sh = Shape{prm: s.prm, head: s.headOf(fs), sub: f.header()}
	count := sh.head.count
	sh.head.count, sh.sub.count = 0, 0
	b = binary.LittleEndian.AppendUint64(b, count)
	return sh, f.appendPayload(b), true
}

// StateSize is the length of the state of a filter of shape sh.
func (sh Shape) StateSize() int { return 8 + int(sh.sub.m/8) }

// EncodedSize is the length of the whole encoding of a filter of shape
// sh (Scalable.EncodedSize): its shape, its bit array and the trailer.
func (sh Shape) EncodedSize() int64 { return ShapeSize + int64(sh.sub.m/8) + trailerSize }

// AppendBinary appends the shape's encoding to b: the first ShapeSize
// bytes of the encoding of a filter of this shape whose count is 0
// (encoding.BinaryAppender).
func (sh Shape) AppendBinary(b []byte) ([]byte, error) {
	if sh.prm == nil {
		return b, fmt.Errorf("%w: the zero Shape has no encoding", ErrFormat)
	}
	b = sh.head.appendTo(b)
	b = sh.prm.appendBlock(b)
	return sh.sub.appendTo(b), nil
}

// StateLoader decodes the states of filters of one shape. It is not
// safe for concurrent use: it rebuilds each encoding in a buffer of its
// own.
type StateLoader struct {
	enc  []byte // the shape's encoding, then room for a payload and trailer
	r    bytes.Reader
	c    config
	size Sizing // of the filters' one sub-filter
}

// NewStateLoader checks shape, a shape's encoding, as LoadScalable with
// opts checks a filter's (the size limit of WithMaxBytes, the key of
// WithKey), and returns the loader of its states. The check decodes a
// filter of the shape, so it allocates the shape's bit array, within the
// size limit.
func NewStateLoader(shape []byte, opts ...Option) (*StateLoader, error) {
	if len(shape) != ShapeSize {
		return nil, fmt.Errorf("%w: a shape of %d bytes, not %d", ErrFormat, len(shape), ShapeSize)
	}
	c := newConfig(opts)
	h, err := parseHeader(shape[:headerSize])
	if err != nil {
		return nil, err
	}
	sub, err := parseHeader(shape[headerSize+scalableParams:])
	if err != nil {
		return nil, fmt.Errorf("bloom: shape's sub-filter: %w", err)
	}
	switch {
	case h.kind != kindScalable || sub.kind != kindFilter:
		return nil, fmt.Errorf("%w: a shape of kinds %d and %d, not %d and %d", ErrFormat, h.kind, sub.kind, kindScalable, kindFilter)
	case h.m != 1:
		return nil, fmt.Errorf("%w: a shape of %d sub-filters, not 1", ErrFormat, h.m)
	case h.count != 0 || sub.count != 0:
		return nil, fmt.Errorf("%w: a shape with counts %d and %d, not 0", ErrFormat, h.count, sub.count)
	case sub.m%64 != 0:
		return nil, fmt.Errorf("%w: a shape of %d bits, not a multiple of 64", ErrFormat, sub.m)
	case sub.m/8 > c.maxBytes:
		return nil, fmt.Errorf("%w: a shape of %d bits, limit %d bytes", ErrTooLarge, sub.m, c.maxBytes)
	}
	l := &StateLoader{enc: make([]byte, 0, ShapeSize+sub.m/8+trailerSize), c: c}
	l.enc = append(l.enc, shape...)
	f, err := l.Load(make([]byte, l.StateSize()))
	if err != nil {
		return nil, err
	}
	l.size = f.first.Sizing()
	return l, nil
}

// Sizing is the geometry of the one sub-filter of the filters l
// decodes: their bit arrays are Sizing().Bits/64 words.
func (l *StateLoader) Sizing() Sizing { return l.size }

// StateSize is the length of the states l decodes.
func (l *StateLoader) StateSize() int { return cap(l.enc) - ShapeSize - trailerSize + 8 }

// EncodedSize is the length of the whole encoding of a filter l
// decodes (Shape.EncodedSize of its shape).
func (l *StateLoader) EncodedSize() int64 { return int64(cap(l.enc)) }

// Load decodes a filter of l's shape from its state (AppendState's
// bytes), with every check LoadScalable makes.
func (l *StateLoader) Load(state []byte) (*Scalable, error) { return l.load(nil, state, l.c) }

// load is Load into dst (nil: a new filter) with c.
func (l *StateLoader) load(dst *Scalable, state []byte, c config) (*Scalable, error) {
	if len(state) != l.StateSize() {
		return nil, fmt.Errorf("%w: a state of %d bytes, not %d", ErrFormat, len(state), l.StateSize())
	}
	le := binary.LittleEndian
	b := l.enc[:ShapeSize]
	count := state[:8]
	for _, h := range [...][]byte{b[:headerSize], b[headerSize+scalableParams:]} {
		copy(h[48:56], count)
		le.PutUint32(h[60:], crc32.Checksum(h[:60], castagnoli))
	}
	payload := state[8:]
	b = append(b, payload...)
	b = appendTrailer(b, crc32.Checksum(payload, castagnoli))
	l.r.Reset(b)
	return decodeScalableInto(dst, &l.r, c)
}

// LoadInto is Load into memory the caller provides, as
// ScalableMaker.Init makes a filter: *dst, a zero Scalable that nothing
// else uses yet, becomes the filter, over the bit array words. words
// must be exactly Sizing().Bits/64 long, used by nothing else for as long
// as the filter lives, and in the blocked layout aligned to 64 bytes;
// words that are not get an error wrapping ErrInvalidSize, and dst stays
// zero. A store can so hold the filter, its bits and data of its own as
// one object.
func (l *StateLoader) LoadInto(dst *Scalable, words []uint64, state []byte) error {
	if err := checkWords(l.size, words); err != nil {
		return err
	}
	c := l.c
	c.words = words
	if _, err := l.load(dst, state, c); err != nil {
		dst.prm, dst.first = nil, Filter{}
		clear(words)
		return err
	}
	return nil
}
