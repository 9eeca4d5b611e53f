package bloom

import (
	"bytes"
	"fmt"
	"io"
)

// A Scalable filter in pieces, for stores that move it in bounded chunks
// (RESP BF.SCANDUMP / BF.LOADCHUNK, snapshots): DumpHeader is its
// structure, the payload is the concatenation of its sub-filters' bit
// arrays (sub-filter 0 first), read and written with ReadPayloadAt and
// WritePayloadAt. LoadScalableHeader rebuilds an all-zero filter from a
// header; writing the payload back into it gives the original filter.
// docs/FORMAT.md, "Dump header", has the bytes. The header and each
// payload call are each one consistent state; for a dump that is
// consistent across calls while Adds go on, dump a Clone.

// Clone returns a deep copy of s: same parameters, layout, key, size
// limit and concurrency mode, its own bit arrays, taken while no Add is
// under way. The grow hook (SetGrowHook) is not copied. It copies the bit
// arrays word by word, with no encoding.
func (s *Scalable) Clone() *Scalable {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Scalable{prm: s.prm}
	fs := s.filters()
	cs := make([]*Filter, len(fs))
	for i, f := range fs {
		g := &c.first
		if i > 0 {
			g = new(Filter)
		}
		*g = *f
		g.setWords(newWords(f.layout, uint64(len(f.words()))))
		copy(g.words(), f.words()) // every writer holds s.mu
		if f.stripes != nil {
			g.stripes = new([8]paddedU64)
		}
		g.setInserted(f.Inserted())
		cs[i] = g
	}
	c.setChain(cs)
	return c
}

// DumpHeader returns the structure of s without its bits: the 64-byte
// kind-2 header and 64-byte parameter block of its encoding, then each
// sub-filter's 64-byte kind-1 header (with its count), and nothing else.
// It is taken while no Add is under way, so the counts agree.
// LoadScalableHeader reads it back.
func (s *Scalable) DumpHeader() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.filters()
	b := s.head(fs)
	for _, f := range fs {
		h := f.header()
		b = append(b, h.marshal()...)
	}
	return b
}

// LoadScalableHeader returns the filter whose DumpHeader is b, with every
// bit array zero and each sub-filter's count as recorded; fill the bits
// with WritePayloadAt. It checks b as LoadScalable checks an encoding
// (errors wrap ErrFormat, ErrChecksum, ErrKeyRequired or ErrWrongKey),
// refuses bytes missing or left over (ErrFormat), and refuses a total size
// over the limit with ErrTooLarge before allocating any bit array.
// Options: WithKey for a keyed filter, WithMaxBytes for the size limit
// (which also bounds later growth), WithConcurrent; WithLayout is ignored.
// (LoadDumpHeader reads this header or RedisBloom's.)
func LoadScalableHeader(b []byte, opts ...Option) (*Scalable, error) {
	r := bytes.NewReader(b)
	c := newConfig(opts)
	s, h, err := readScalableHead(r, c, nil)
	if err != nil {
		return nil, err
	}
	if want := headerSize + scalableParams + int(h.m)*headerSize; len(b) != want {
		return nil, fmt.Errorf("%w: a dump header of %d sub-filters has %d bytes, not %d", ErrFormat, h.m, want, len(b))
	}
	subs := make([]Sizing, h.m) // h.m is bounded, and matches len(b)
	counts := make([]uint64, h.m)
	var size, count, capacity uint64
	n2s := make([]uint8, h.m)
	for i := range int(h.m) {
		sh, _, err := readHeader(r, kindFilter)
		if err != nil {
			return nil, fmt.Errorf("bloom: sub-filter %d: %w", i, err)
		}
		sz, err := headerSizing(sh, true)
		if err != nil {
			return nil, fmt.Errorf("bloom: sub-filter %d: %w", i, err)
		}
		if err := checkHash(sh, c); err != nil {
			return nil, fmt.Errorf("bloom: sub-filter %d: %w", i, err)
		}
		if sz.Bytes() > c.maxBytes-size || sz.Bytes() > maxArrayBytes {
			return nil, fmt.Errorf("%w: sub-filter %d has %d bytes after %d, limit %d", ErrTooLarge, i, sz.Bytes(), size, c.maxBytes)
		}
		if sh.hash != h.hash {
			return nil, fmt.Errorf("%w: sub-filter %d hashes with %s in a chain of %s", ErrFormat, i, HashID(sh.hash), HashID(h.hash))
		}
		if capacity, err = s.checkSub(h, i, int(h.m), sz, sh.count, capacity); err != nil {
			return nil, err
		}
		subs[i], counts[i], n2s[i] = sz, sh.count, sh.n2
		size += sz.Bytes()
		count += sh.count
	}
	if err := checkCount(h, count); err != nil {
		return nil, err
	}
	fs := make([]*Filter, h.m)
	for i := range fs {
		fs[i] = &s.first
		if i > 0 {
			fs[i] = new(Filter)
		}
		if err := initFilter(fs[i], subs[i], c); err != nil {
			return nil, err
		}
		if s.prm.rb {
			fs[i].ext = rbExt(HashID(h.hash), subs[i].P, subs[i].BPE, n2s[i])
		}
		fs[i].setInserted(counts[i])
	}
	s.setChain(fs)
	return s, nil
}

// PayloadSize is the length of the payload: the bytes of all sub-filters'
// bit arrays.
func (s *Scalable) PayloadSize() int64 { return int64(s.Bytes()) }

// PayloadSegment returns the payload range [start, end) of the sub-filter
// whose bit array holds payload byte off, and ok = false when off is
// outside the payload. Chunks cut within segments never span sub-filters.
func (s *Scalable) PayloadSegment(off int64) (start, end int64, ok bool) {
	for _, f := range s.filters() {
		end = start + int64(f.Bytes())
		if off >= start && off < end {
			return start, end, true
		}
		start = end
	}
	return 0, 0, false
}

// ReadPayloadAt copies payload bytes [off, off+len(p)) into p
// (io.ReaderAt); the range may span sub-filters. It returns io.EOF when
// the range ends at or past PayloadSize. Each call waits for a running
// Add and holds Adds off while it copies.
func (s *Scalable) ReadPayloadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("bloom: ReadPayloadAt: negative offset %d", off)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	size := s.PayloadSize()
	if off >= size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), size-off)
	err := s.forRange(p[:n], off, func(f *Filter, part []byte, at int64) error {
		if _, err := f.ReadAt(part, at); err != nil && err != io.EOF {
			return err
		}
		return nil
	})
	if err == nil && (n < int64(len(p)) || off+n == size) {
		err = io.EOF
	}
	return int(n), err
}

// WritePayloadAt replaces payload bytes [off, off+len(p)) with p
// (io.WriterAt); the range may span sub-filters. A range past
// PayloadSize is an error (wrapping ErrInvalidSize) and writes nothing.
// It leaves the counts unchanged. Adds wait while it runs, but a reader
// running Test meanwhile may see a half-written filter: load into a
// filter nobody else uses yet.
func (s *Scalable) WritePayloadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	size := s.PayloadSize()
	if off < 0 || off > size || int64(len(p)) > size-off {
		return 0, fmt.Errorf("%w: WritePayloadAt %d bytes at %d of %d", ErrInvalidSize, len(p), off, size)
	}
	err := s.forRange(p, off, func(f *Filter, part []byte, at int64) error {
		if vs := viewsOf(s); vs != nil {
			vs.beforeWrite(f.words(), uint64(at), uint64(len(part)))
		}
		_, err := f.WriteAt(part, at)
		return err
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// forRange calls fn for each sub-filter holding part of payload bytes
// [off, off+len(p)), in order, with that part of p and its offset in the
// sub-filter's bit array.
func (s *Scalable) forRange(p []byte, off int64, fn func(f *Filter, part []byte, at int64) error) error {
	start := int64(0)
	for _, f := range s.filters() {
		end := start + int64(f.Bytes())
		if len(p) > 0 && off < end {
			part := p[:min(int64(len(p)), end-off)]
			if err := fn(f, part, off-start); err != nil {
				return err
			}
			p, off = p[len(part):], off+int64(len(part))
		}
		start = end
	}
	return nil
}
