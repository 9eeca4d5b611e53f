package bloom

import (
	"fmt"
	"unsafe"

	"github.com/bloomery/bloom/internal/hugepage"
)

// Filter is a Bloom filter of fixed size: a set that answers "definitely
// not present" or "probably present", with a false-positive rate fixed at
// construction.
//
// Concurrency: by default, Test, TestMany, TestHash and the read-only
// methods (Count, FillRatio, WriteTo, …) may run from many goroutines at
// once, but Add, AddMany and AddHash need exclusive access. A filter made
// WithConcurrent also allows Add, AddMany and AddHash concurrently with
// each other and with the Test methods. Clear, Union, Intersect, ReadFrom
// and UnmarshalBinary always need exclusive access.
type Filter struct {
	// The hot path reads the first 32 bytes: keep them together.
	wp         *uint64    // the bit array's first word (words), 64-byte aligned when blocked
	nw         uint64     // its length in words, m/64
	ext        *filterExt // key or RedisBloom bits per entry; nil for unkeyed XXH3
	k          uint32
	layout     Layout
	mode       uint8 // modeBlocked, modeBlockedVec7 or modeBlockedVec14 for the fast path, else modeOther
	concurrent bool

	inserted uint64        // Adds that reported new (exclusive mode)
	stripes  *[8]paddedU64 // the same, striped for WithConcurrent

	n uint64  // expected items (capacity)
	p float64 // target false-positive rate at n
}

// words is the bit array. The filter keeps its start and length, not a
// slice (whose capacity is its length): 8 bytes less in every filter,
// of which a server keeps one per key (docs/DESIGN.md §5).
func (f *Filter) words() []uint64 { return unsafe.Slice(f.wp, f.nw) }

// setWords makes w the bit array.
func (f *Filter) setWords(w []uint64) { f.wp, f.nw = unsafe.SliceData(w), uint64(len(w)) }

// m is the number of bits.
func (f *Filter) m() uint64 { return f.nw * 64 }

// blocks is the number of 512-bit blocks (of the blocked layout).
func (f *Filter) blocks() uint64 { return f.nw / 8 }

// maxArrayBytes is a hard ceiling on any bit array (1 PiB), whatever
// WithMaxBytes says, so that no size can overflow an allocation.
const maxArrayBytes = 1 << 50

const (
	modeOther   = 0 // classic or concurrent: dispatch on layout and mode
	modeBlocked = 1 // blocked, exclusive, k <= maxStraightK: the hot path

	// modeBlockedVec7 and modeBlockedVec14 are modeBlocked on a CPU with
	// AVX-512F, for k <= 7 and k in [8, 14]: Test runs on vector
	// registers (probe_vec.go); Add is modeBlocked's.
	modeBlockedVec7  = 2
	modeBlockedVec14 = 3
)

type paddedU64 struct {
	v uint64
	_ [56]byte
}

// New returns an empty filter for n expected distinct items at a
// false-positive rate of at most p, sized with the exact model of the
// layout (WithLayout; Blocked by default).
func New(n uint64, p float64, opts ...Option) (*Filter, error) {
	c := newConfig(opts)
	s, err := Size(n, p, c.layout)
	if err != nil {
		return nil, err
	}
	return newFilter(s, c)
}

// NewSized returns an empty filter with exactly the geometry s (layout,
// bits, k, and the n and p it is meant for). Bits must be a positive
// multiple of 64 (512 for Blocked), and the geometry must hold its rate
// (Sizing.CheckRate: the decoders refuse a filter that does not, so
// NewSized refuses to make one; for the RedisBloom layout, it must be
// RedisBloom's geometry for N and P). The layout comes from s; a
// WithLayout option is ignored.
func NewSized(s Sizing, opts ...Option) (*Filter, error) {
	c := newConfig(opts)
	c.layout = s.Layout
	if err := checkSizing(s); err != nil {
		return nil, err
	}
	if err := s.CheckRate(); err != nil {
		return nil, err
	}
	return newFilter(s, c)
}

func checkSizing(s Sizing) error {
	switch s.Layout {
	case Blocked:
		if s.Bits == 0 || s.Bits%BlockBits != 0 {
			return fmt.Errorf("%w: blocked filter bits %d is not a positive multiple of %d", ErrInvalidSize, s.Bits, BlockBits)
		}
	case Classic, RedisBloom:
		if s.Bits == 0 || s.Bits%64 != 0 {
			return fmt.Errorf("%w: %s filter bits %d is not a positive multiple of 64", ErrInvalidSize, s.Layout, s.Bits)
		}
	default:
		return fmt.Errorf("%w: %d", ErrInvalidLayout, s.Layout)
	}
	if maxK := s.Layout.maxK(); s.K < 1 || s.K > maxK {
		return fmt.Errorf("%w: k = %d, want 1..%d", ErrInvalidK, s.K, maxK)
	}
	if err := s.checkBPE(); err != nil {
		return err
	}
	if s.N == 0 {
		return ErrInvalidCapacity
	}
	if !(s.P > 0 && s.P < 1) {
		return fmt.Errorf("%w: got %v", ErrInvalidRate, s.P)
	}
	return nil
}

func newFilter(s Sizing, c config) (*Filter, error) {
	f := new(Filter)
	if err := initFilter(f, s, c); err != nil {
		return nil, err
	}
	return f, nil
}

// initFilter makes *f an empty filter of geometry s with c's key,
// concurrency mode and size limit (so that a Scalable can hold its first
// sub-filter in place).
func initFilter(f *Filter, s Sizing, c config) error {
	if err := c.checkFilter(s); err != nil {
		return err
	}
	words := c.words
	if words == nil {
		words = newWords(s.Layout, s.Bits/64)
	} else if err := checkWords(s, words); err != nil {
		return err
	}
	f.setup(s, c, words)
	return nil
}

// checkFilter refuses a filter of geometry s that c cannot make: a layout
// it cannot be made in, or a bit array above its size limit.
func (c config) checkFilter(s Sizing) error {
	if err := c.checkLayout(s.Layout); err != nil {
		return err
	}
	if s.Bytes() > c.maxBytes || s.Bytes() > maxArrayBytes {
		return fmt.Errorf("%w: %d items at p=%g need %d bytes, limit %d (raise it with WithMaxBytes)",
			ErrTooLarge, s.N, s.P, s.Bytes(), c.maxBytes)
	}
	return nil
}

// newWords allocates the n zeroed words of a bit array in layout l:
// 64-byte aligned in the blocked layout, so that a block is one cache
// line (alignedWords); at their exact size in the others, whose probes
// land anywhere in the array, so that alignment saves no cache line and
// a small array takes only its size class (152 bytes take 160, where
// aligning them took 208).
func newWords(l Layout, n uint64) []uint64 {
	if l == Blocked {
		return alignedWords(n)
	}
	w := make([]uint64, n)
	hugepage.Advise(wordBytes(w))
	return w
}

// setup makes *f an empty filter of geometry s over words (all zero,
// s.Bits/64 of them), with c's key and concurrency mode.
func (f *Filter) setup(s Sizing, c config, words []uint64) {
	*f = Filter{
		wp:         unsafe.SliceData(words),
		nw:         uint64(len(words)),
		ext:        c.ext(s),
		k:          s.K,
		layout:     s.Layout,
		concurrent: c.concurrent,
		n:          s.N,
		p:          s.P,
	}
	if c.concurrent {
		f.stripes = new([8]paddedU64)
	}
	if f.layout == Blocked && !f.concurrent && f.k <= maxStraightK {
		f.mode = modeBlocked
		switch {
		case vecProbe && f.k <= fieldsPerWord:
			f.mode = modeBlockedVec7
		case vecProbe:
			f.mode = modeBlockedVec14
		}
	}
}

// checkLayout refuses what layout l cannot be made with: a key in the
// RedisBloom layout, whose hash is RedisBloom's.
func (c config) checkLayout(l Layout) error {
	if l == RedisBloom && c.keyed {
		return fmt.Errorf("%w: the RedisBloom layout hashes with RedisBloom's MurmurHash64A and cannot be keyed (WithKey)", ErrInvalidLayout)
	}
	return nil
}

// alignedWords allocates n zeroed words starting on a 64-byte boundary,
// so that each 512-bit block is exactly one cache line. Go's allocator
// places an object of a size class that is a multiple of 64 bytes (every
// class a whole number of blocks rounds up to, and every page-sized
// span) at a multiple of 64, so the exact allocation is aligned in
// practice and costs no padding. For other sizes, or if it is not
// aligned (another allocator), alignedWords allocates 7 words more and
// starts inside them.
func alignedWords(n uint64) []uint64 {
	var buf []uint64
	if n%8 == 0 { // whole blocks
		buf = make([]uint64, n)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(buf)))&63 != 0 || buf == nil {
		buf = make([]uint64, n+7)
		off := (64 - uintptr(unsafe.Pointer(unsafe.SliceData(buf)))&63) & 63 / 8
		buf = buf[off : uint64(off)+n : uint64(off)+n]
	}
	hugepage.Advise(wordBytes(buf))
	return buf
}

// Hash returns the filter's hash of item: XXH3-128, SipHash-2-4-128
// under the filter's key, or RedisBloomHash in the RedisBloom layout.
func (f *Filter) Hash(item []byte) Hash { return f.ext.hash(item) }

// Add inserts item and reports whether it was new: whether at least one of
// its bits was unset before. A false result means the item was present
// or is a false positive. Add never retains or modifies item.
func (f *Filter) Add(item []byte) bool {
	var h Hash
	if f.ext != nil {
		h = f.ext.hashOther(item)
	} else {
		h = HashBytes(item)
	}
	if f.mode != modeOther {
		if asmAdd { // written out, as Test's switch: a helper does not inline (probe_add_amd64.go)
			return addBlockAsm(f.block(h), h.H1, h.H2, f.k, &f.inserted)
		}
		return f.addBlocked(h)
	}
	return f.addOther(h)
}

// AddString is Add for a string, without copying it.
func (f *Filter) AddString(s string) bool { return f.Add(bytesOf(s)) }

// Test reports whether item may be in the set. False means definitely
// not; true may be a false positive, with about the filter's rate.
func (f *Filter) Test(item []byte) bool {
	var h Hash
	if f.ext != nil {
		h = f.ext.hashOther(item)
	} else {
		h = HashBytes(item)
	}
	// TestHash's switch, written out: TestHash is too large to inline, and
	// one call more between Test and the probes costs a filter larger than
	// the caches about a third of its speed (probe_vec.go).
	switch f.mode {
	case modeBlockedVec7:
		return testBlockVec7(f.block(h), h.H2, f.k)
	case modeBlockedVec14:
		return testBlockVec14(f.block(h), h.H1, h.H2, f.k)
	case modeBlocked:
		return f.testBlocked(h)
	}
	return f.testOther(h)
}

// TestString is Test for a string, without copying it.
func (f *Filter) TestString(s string) bool { return f.Test(bytesOf(s)) }

// AddHash inserts an item by its 128-bit hash and reports whether it was
// new. Use it when you hash items yourself; mixing it with Add on one
// filter is only correct if h = f.Hash(item).
func (f *Filter) AddHash(h Hash) bool {
	if f.mode != modeOther {
		if asmAdd { // written out, as Test's switch: a helper does not inline (probe_add_amd64.go)
			return addBlockAsm(f.block(h), h.H1, h.H2, f.k, &f.inserted)
		}
		return f.addBlocked(h)
	}
	return f.addOther(h)
}

//go:noinline
func (f *Filter) addOther(h Hash) bool {
	var changed bool
	switch {
	case f.concurrent:
		changed = f.addAtomic(h)
	case f.layout == RedisBloom:
		changed = f.addRedisBloom(h)
	case f.layout == Blocked:
		changed = f.addBlockedLong(h) != 0
	default:
		changed = f.addClassic(h)
	}
	if changed {
		f.countNew(h)
	}
	return changed
}

// TestHash reports whether an item with hash h may be in the set.
func (f *Filter) TestHash(h Hash) bool {
	switch f.mode {
	case modeBlockedVec7:
		return testBlockVec7(f.block(h), h.H2, f.k)
	case modeBlockedVec14:
		return testBlockVec14(f.block(h), h.H1, h.H2, f.k)
	case modeBlocked:
		return f.testBlocked(h)
	}
	return f.testOther(h)
}

//go:noinline
func (f *Filter) testOther(h Hash) bool {
	switch {
	case f.concurrent:
		return f.testAtomic(h)
	case f.layout == RedisBloom:
		return f.testRedisBloom(h)
	case f.layout == Blocked:
		return f.testBlockedLong(h)
	}
	return f.testClassic(h)
}

// Cap is the number of distinct items the filter was sized for.
func (f *Filter) Cap() uint64 { return f.n }

// TargetFPR is the false-positive rate the filter was sized for at Cap items.
func (f *Filter) TargetFPR() float64 { return f.p }

// Bits is the size of the bit array, m.
func (f *Filter) Bits() uint64 { return f.m() }

// K is the number of bit probes per item.
func (f *Filter) K() uint32 { return f.k }

// Bytes is the size of the bit array in bytes.
func (f *Filter) Bytes() uint64 { return f.m() / 8 }

// Layout is the filter's layout.
func (f *Filter) Layout() Layout { return f.layout }

// HashID names the filter's hash function.
func (f *Filter) HashID() HashID { return f.ext.hashID() }

// Keyed reports whether the filter hashes with a secret key.
func (f *Filter) Keyed() bool { return f.ext.keyed() }

// Concurrent reports whether the filter was made WithConcurrent.
func (f *Filter) Concurrent() bool { return f.concurrent }

// Sizing returns the filter's geometry.
func (f *Filter) Sizing() Sizing {
	return Sizing{Layout: f.layout, N: f.n, P: f.p, Bits: f.m(), K: f.k, BPE: f.ext.bitsPerEntry()}
}
