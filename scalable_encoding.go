package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync/atomic"

	"github.com/bloomery/bloom/internal/encio"
)

// The encoding of a Scalable filter (docs/FORMAT.md, kind 2):
//
//	header      64 bytes: the Filter header with kind 2, m = the number of
//	            sub-filters, k = 0, n = initial capacity, p = compound
//	            rate, count = items inserted; version 3 in the blocked
//	            layout when its small sub-filters are classic (subSizing)
//	parameters  64 bytes: expansion u64 (0: non-scaling), tightening f64,
//	            first share f64, 36 zero bytes (in the RedisBloom layout
//	            the first 8 hold its growth and options, u32 each),
//	            CRC-32C of bytes 0–59
//	sub-filters each a complete Filter encoding (kind 1) whose count is
//	            the items that sub-filter took

const (
	kindScalable   = 2  // the header kind of a Scalable filter
	scalableParams = 64 // bytes of the parameter block after the header
)

// EncodedSize is the length of the filter's encoding in bytes.
func (s *Scalable) EncodedSize() int64 {
	total := int64(headerSize + scalableParams)
	for _, f := range s.filters() {
		total += f.EncodedSize()
	}
	return total
}

// WriteTo writes the filter's encoding to w (io.WriterTo). Adds wait
// while it runs, so the encoding is one consistent state; tests do not.
func (s *Scalable) WriteTo(w io.Writer) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.filters()
	n, err := w.Write(s.head(fs))
	total := int64(n)
	if err != nil {
		return total, fmt.Errorf("bloom: write scalable header: %w", err)
	}
	for i, f := range fs {
		n, err := f.WriteTo(w)
		total += n
		if err != nil {
			return total, fmt.Errorf("bloom: sub-filter %d: %w", i, err)
		}
	}
	return total, nil
}

// AppendBinary appends the filter's encoding to b, as WriteTo writes it
// (encoding.BinaryAppender): for a small filter, an encoding without an
// allocation when b has room. Adds wait while it runs.
func (s *Scalable) AppendBinary(b []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.filters()
	if len(fs) == 0 {
		return b, fmt.Errorf("%w: an empty Scalable has no encoding", ErrFormat)
	}
	b = s.appendHead(b, fs)
	for _, f := range fs {
		b = f.appendEncoding(b)
	}
	return b, nil
}

// appendEncoding appends f's encoding to dst: what WriteTo writes. The
// caller keeps Adds out (a Scalable's add lock), as for WriteTo.
func (f *Filter) appendEncoding(dst []byte) []byte {
	h := f.header()
	dst = h.appendTo(dst)
	start := len(dst)
	dst = f.appendPayload(dst)
	return appendTrailer(dst, crc32.Checksum(dst[start:], castagnoli))
}

// appendPayload appends f's bit array, its encoding's payload, to dst.
// The caller keeps Adds out, as for appendEncoding.
func (f *Filter) appendPayload(dst []byte) []byte {
	words := f.words()
	if littleEndian && !f.concurrent {
		return append(dst, wordBytes(words)...)
	}
	for i := range words {
		dst = binary.LittleEndian.AppendUint64(dst, atomic.LoadUint64(&words[i]))
	}
	return dst
}

// head returns the kind-2 header and the parameter block of the chain fs,
// 128 bytes. The caller holds s.mu.
func (s *Scalable) head(fs []*Filter) []byte {
	return s.appendHead(make([]byte, 0, headerSize+scalableParams), fs)
}

// appendHead appends head(fs) to dst.
func (s *Scalable) appendHead(dst []byte, fs []*Filter) []byte {
	h := s.headOf(fs)
	dst = h.appendTo(dst)
	return s.prm.appendBlock(dst)
}

// headOf is the kind-2 header of the chain fs. The caller holds s.mu.
func (s *Scalable) headOf(fs []*Filter) header {
	h := header{kind: kindScalable, layout: uint8(s.prm.layout), hash: uint8(fs[0].HashID()),
		m: uint64(len(fs)), n: fs[0].n, p: s.prm.p, count: s.Count(),
		small: s.prm.layout == Blocked && !s.prm.uniform}
	if fs[0].ext.keyed() {
		h.flags, h.keyCheck = flagKeyed, fs[0].KeyCheck()
	}
	return h
}

// appendBlock appends the parameter block of a chain with parameters
// prm (scalableParams bytes) to dst.
func (prm *growthParams) appendBlock(dst []byte) []byte {
	dst = append(dst, make([]byte, scalableParams)...)
	b := dst[len(dst)-scalableParams:]
	le := binary.LittleEndian
	le.PutUint64(b[0:], prm.s)
	le.PutUint64(b[8:], math.Float64bits(prm.r))
	le.PutUint64(b[16:], math.Float64bits(prm.f))
	if prm.layout == RedisBloom {
		le.PutUint32(b[24:], prm.rbGrowth)
		le.PutUint32(b[28:], prm.rbOptions)
	}
	le.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return dst
}

// MarshalBinary returns the filter's encoding (encoding.BinaryMarshaler).
func (s *Scalable) MarshalBinary() ([]byte, error) { return encio.Marshal(s, s.EncodedSize()) }

// UnmarshalBinary replaces s with the scalable filter encoded in data
// (encoding.BinaryUnmarshaler); data must hold exactly one encoding. It
// reads keyed encodings with s's key (from NewScalable(…, WithKey(key)));
// use LoadScalable otherwise. On error s is unchanged. Like
// Filter.UnmarshalBinary it needs exclusive access: no other method of s
// may run meanwhile.
func (s *Scalable) UnmarshalBinary(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := config{maxBytes: DefaultMaxBytes}
	if fs := s.filters(); len(fs) > 0 {
		c.concurrent = fs[0].concurrent
		c.keyed, c.key = keyConfig(fs[0].ext)
	}
	r := bytes.NewReader(data)
	g, err := decodeScalable(r, c)
	if err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the filter", ErrFormat, r.Len())
	}
	s.prm = g.prm
	fs := g.filters()
	s.first = g.first
	s.chain.Store(nil)
	if len(fs) > 1 {
		fs = append([]*Filter{&s.first}, fs[1:]...)
		s.chain.Store(&fs)
	}
	return nil
}

// LoadScalable decodes a scalable filter from r. Options: WithKey to read
// a keyed filter, WithMaxBytes to change the size limit (which also bounds
// its later growth), WithConcurrent for the returned filter; WithLayout is
// ignored (the encoding says).
func LoadScalable(r io.Reader, opts ...Option) (*Scalable, error) {
	return decodeScalable(r, newConfig(opts))
}

func decodeScalable(r io.Reader, c config) (*Scalable, error) {
	return decodeScalableInto(nil, r, c)
}

// decodeScalableInto is decodeScalable into dst, a zero Scalable, when
// it is not nil (its first sub-filter's bit array c.words, when set).
// On error dst may be changed.
func decodeScalableInto(dst *Scalable, r io.Reader, c config) (*Scalable, error) {
	s, h, err := readScalableHead(r, c, dst)
	if err != nil {
		return nil, err
	}
	fs := make([]*Filter, 0, h.m)
	var size, count, capacity uint64
	for i := range int(h.m) {
		sc := c
		sc.maxBytes = c.maxBytes - size
		f := &s.first
		if i > 0 {
			f, sc.words = new(Filter), nil
		}
		if _, err := decodeInto(f, r, sc, true); err != nil {
			return nil, fmt.Errorf("bloom: sub-filter %d: %w", i, err)
		}
		if f.HashID() != HashID(h.hash) {
			return nil, fmt.Errorf("%w: sub-filter %d hashes with %s in a chain of %s", ErrFormat, i, f.HashID(), HashID(h.hash))
		}
		if capacity, err = s.checkSub(h, i, int(h.m), f.Sizing(), f.Inserted(), capacity); err != nil {
			return nil, err
		}
		fs = append(fs, f)
		size += f.Bytes()
		count += f.Inserted()
	}
	if err := checkCount(h, count); err != nil {
		return nil, err
	}
	s.setChain(fs)
	return s, nil
}

// setChain makes fs, whose first element is &s.first, the chain of a
// filter nobody else uses yet.
func (s *Scalable) setChain(fs []*Filter) {
	if s.first.ext.keyed() {
		for _, f := range fs[1:] {
			f.ext = s.first.ext // one key for all
		}
	}
	if len(fs) > 1 {
		s.chain.Store(&fs)
	}
}

// ruleOf is the growth rule of s with the first capacity in h.
func (s *Scalable) ruleOf(h header) growthRule {
	return growthRule{h.n, s.prm.p, s.prm.s, s.prm.r, s.prm.f}
}

// readScalableHead reads and checks the kind-2 header and the parameter
// block, and returns the filter they describe, with no sub-filters yet
// (its size limit c's), and the header. The filter is dst, when not nil
// (a zero Scalable), else a new one.
func readScalableHead(r io.Reader, c config, dst *Scalable) (*Scalable, header, error) {
	h, _, err := readHeader(r, kindScalable)
	if err != nil {
		return nil, h, err
	}
	var prm [scalableParams]byte
	if _, err := io.ReadFull(r, prm[:]); err != nil {
		return nil, h, fmt.Errorf("%w: reading scalable parameters: %w", ErrFormat, encio.NoEOF(err))
	}
	le := binary.LittleEndian
	if got, want := crc32.Checksum(prm[:60], castagnoli), le.Uint32(prm[60:]); got != want {
		return nil, h, fmt.Errorf("%w: scalable parameters CRC %08x, stored %08x", ErrChecksum, got, want)
	}
	layout := Layout(h.layout)
	zeroFrom := 24 // the RedisBloom layout has its growth and options in 24–31
	if layout == RedisBloom {
		zeroFrom = 32
	}
	if !encio.AllZero(prm[zeroFrom:60]) || h.k != 0 || h.bpe != 0 {
		return nil, h, fmt.Errorf("%w: reserved scalable fields are set", ErrFormat)
	}
	if err := checkHash(h, c); err != nil {
		return nil, h, err
	}
	if limit := maxSubFilters(layout); h.m == 0 || h.m > uint64(limit) {
		return nil, h, fmt.Errorf("%w: %d sub-filters (1 to %d allowed)", ErrFormat, h.m, limit)
	}
	if layout != Blocked && layout != Classic && layout != RedisBloom {
		return nil, h, fmt.Errorf("%w: layout %d", ErrFormat, h.layout)
	}
	so := Growth{Expansion: le.Uint64(prm[0:]), NonScaling: le.Uint64(prm[0:]) == 0,
		Tightening: math.Float64frombits(le.Uint64(prm[8:])), FirstShare: math.Float64frombits(le.Uint64(prm[16:]))}
	if !(so.Tightening > 0 && so.Tightening < 1 && so.FirstShare > 0 && so.FirstShare < 1) {
		return nil, h, fmt.Errorf("%w: tightening %v, first share %v", ErrFormat, so.Tightening, so.FirstShare)
	}
	if so.Expansion > MaxExpansion {
		return nil, h, fmt.Errorf("%w: expansion %d above the maximum %d", ErrFormat, so.Expansion, uint64(MaxExpansion))
	}
	gp := growthParams{p: h.p, s: so.Expansion, r: so.Tightening, f: so.FirstShare, maxBytes: c.maxBytes,
		layout: layout, uniform: layout == Blocked && !h.small}
	if layout == RedisBloom { // any chain RedisBloom takes (redisbloom_chain.go)
		if gp, err = checkRedisBloomParams(gp, le.Uint32(prm[24:]), le.Uint32(prm[28:]), HashID(h.hash)); err != nil {
			return nil, h, err
		}
		if h.n == 0 || !(h.p > 0 && h.p < 2) {
			return nil, h, fmt.Errorf("%w: a RedisBloom chain from capacity %d at rate %v", ErrFormat, h.n, h.p)
		}
		return withParams(dst, params(gp)), h, nil
	}
	if so.NonScaling && h.m != 1 {
		return nil, h, fmt.Errorf("%w: a non-scaling filter with %d sub-filters", ErrFormat, h.m)
	}
	s := withParams(dst, params(gp))
	if err := checkNP(h.n, h.p); err != nil {
		return nil, h, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if total, ok := s.ruleOf(h).capacity(int(h.m)); !ok {
		return nil, h, fmt.Errorf("%w: %d sub-filters from capacity %d with expansion %d hold more than 2^63-1 items (%d)",
			ErrFormat, h.m, h.n, so.Expansion, total)
	}
	return s, h, nil
}

// withParams returns dst, or a new Scalable when it is nil, with
// parameters prm.
func withParams(dst *Scalable, prm *growthParams) *Scalable {
	if dst == nil {
		dst = new(Scalable)
	}
	dst.prm = prm
	return dst
}

// checkSub checks sub-filter i (of m) of s's chain, read with header h
// (its kind-2 header: layout, hash, first capacity), of geometry sz and
// count items, capacity the capacities of the sub-filters before it: by
// the chain's growth rule (growthRule.checkSub), or for a RedisBloom
// chain only its layout, its first capacity, and the capacities summing
// to at most 2^63-1. It returns capacity with sz's added.
func (s *Scalable) checkSub(h header, i, m int, sz Sizing, count, capacity uint64) (uint64, error) {
	if !s.prm.rb {
		return capacity + sz.N, s.ruleOf(h).checkSub(s.prm, i, m, sz, count)
	}
	var err error
	switch {
	case sz.Layout != RedisBloom:
		err = fmt.Errorf("layout %s in a %s chain", sz.Layout, RedisBloom)
	case i == 0 && sz.N != h.n:
		err = fmt.Errorf("capacity %d, the chain's header says %d", sz.N, h.n)
	case capacity+sz.N > math.MaxInt64 || capacity+sz.N < capacity:
		err = errors.New("the capacities sum past 2^63-1")
	}
	if err != nil {
		return 0, fmt.Errorf("%w: sub-filter %d: %w", ErrFormat, i, err)
	}
	return capacity + sz.N, nil
}

// checkSub checks sub-filter i of a chain of m with parameters prm, with
// geometry sz and count items, against the chain's rules g: its capacity
// and rate, its layout (the one subSizing gives them, exactly), and
// every sub-filter but the last holding exactly its capacity.
//
// A non-scaling filter's sub-filter may also have the rate p·f: before
// the whole rate went to it, writers gave it its first share (except in
// the RedisBloom layout, which is younger).
func (g growthRule) checkSub(prm *growthParams, i, m int, sz Sizing, count uint64) error {
	capacity, p := g.sub(i)
	if g.s == 0 && prm.layout != RedisBloom && sz.P == g.p*g.f {
		p = sz.P
	}
	var err error
	switch {
	case sz.Layout != prm.layout && sz.Layout != Classic:
		err = fmt.Errorf("layout %s in a %s chain", sz.Layout, prm.layout)
	case sz.N != capacity || sz.P != p:
		err = fmt.Errorf("capacity %d at rate %g, the chain's rules give %d at %g", sz.N, sz.P, capacity, p)
	case sz.Layout != subLayout(capacity, p, prm.layout, prm.uniform):
		err = fmt.Errorf("layout %s in a %s chain at capacity %d and rate %g (%s)", sz.Layout, prm.layout, capacity, p, prm.ruleName())
	case count > capacity || (i < m-1 && count != capacity):
		err = fmt.Errorf("%d items for capacity %d", count, capacity)
	}
	if err != nil {
		return fmt.Errorf("%w: sub-filter %d: %w", ErrFormat, i, err)
	}
	return nil
}

// ruleName says how a chain with parameters prm lays out its sub-filters.
func (prm *growthParams) ruleName() string {
	if prm.layout == Blocked && !prm.uniform {
		return "small sub-filters classic where smaller"
	}
	return "uniform"
}

// checkCount checks the header's count against the sub-filters' sum.
func checkCount(h header, count uint64) error {
	if count != h.count {
		return fmt.Errorf("%w: %d items in the header, %d in the sub-filters", ErrFormat, h.count, count)
	}
	return nil
}
