package bloom

import (
	"fmt"
	"math"
	"sync/atomic"
)

// The RedisBloom layout (layout 3): RedisBloom's sizing and bit
// placement, so that a filter answers exactly as RedisBloom's does,
// false positives included (docs/DESIGN.md §10; the bytes: docs/FORMAT.md,
// "RedisBloom layout").
//
// Sizing (RedisBloom's bloom_init with its options FORCE64|NOROUND): bits
// per entry bpe = −ln p / ln²2; bits = ⌊n·bpe⌋ (at least 1) rounded up
// to a multiple of 64; k = ⌈ln 2 · bpe⌉, with RedisBloom's own decimal
// constants for ln 2 and ln²2. bpe is recorded with the filter as
// RedisBloom records it: the logarithm of two C libraries may differ in
// its last bit, so a filter loaded from RedisBloom keeps its own.
//
// Placement: probe i (0 ≤ i < k) of an item with hash h is bit
// x = (H1 + i·H2) mod 2^64 mod m, byte x>>3 mask 1<<(x&7) (least
// significant bit first), which in the filter's little-endian words is
// physical bit x: word x>>6, bit x&63 (its logical offset, in the Redis
// numbering of the other layouts, is x^7).

const (
	rbLn2        = 0.693147180559945 // RedisBloom's LN2
	rbLn2Squared = 0.480453013918201 // RedisBloom's ln(2)^2
)

// maxRedisBloomK is the most probes a RedisBloom geometry has: that of
// the smallest error rate above 0 (5e-324, bpe 1549.5).
const maxRedisBloomK = 1075

// maxK is the most probes layout l allows.
func (l Layout) maxK() uint32 {
	if l == RedisBloom {
		return maxRedisBloomK
	}
	return MaxK
}

// redisBloomHashes is RedisBloom's probe count for bits per entry bpe,
// ⌈ln 2 · bpe⌉, or 0 when that is not a probe count (bpe not finite and
// positive, or above any RedisBloom geometry's).
func redisBloomHashes(bpe float64) uint32 {
	k := math.Ceil(rbLn2 * bpe)
	if !(k >= 1 && k <= maxRedisBloomK) {
		return 0
	}
	return uint32(k)
}

// redisBloomBits is RedisBloom's bit count for n entries at bpe bits per
// entry: ⌊n·bpe⌋, at least 1, rounded up to a multiple of 64; ok is false
// when that does not fit 2^63 bits.
func redisBloomBits(n uint64, bpe float64) (bits uint64, ok bool) {
	x := float64(n) * bpe
	if !(x < 0x1p63) {
		return 0, false
	}
	bits = max(uint64(x), 1)
	return (bits + 63) &^ 63, true
}

// redisBloomSize is Size for the RedisBloom layout: bloom_init's
// geometry for n entries at error rate p, with bpe computed here.
func redisBloomSize(n uint64, p float64) (Sizing, error) {
	bpe := redisBloomBPE(p)
	bits, ok := redisBloomBits(n, bpe)
	if !ok {
		return Sizing{}, fmt.Errorf("%w: n=%d p=%g needs more than 2^63 bits", ErrTooLarge, n, p)
	}
	return Sizing{Layout: RedisBloom, N: n, P: p, Bits: bits, K: redisBloomHashes(bpe), BPE: bpe}, nil
}

// bitsPerEntry is the bits per entry of a RedisBloom-layout geometry:
// BPE, or RedisBloom's for P when BPE is 0. Other layouts have none (0).
func (s Sizing) bitsPerEntry() float64 {
	switch {
	case s.Layout != RedisBloom:
		return 0
	case s.BPE != 0:
		return s.BPE
	}
	return redisBloomBPE(s.P)
}

// checkBPE checks the BPE field: 0 for the layouts that have none; 0 or
// finite and positive for the RedisBloom layout.
func (s Sizing) checkBPE() error {
	if s.BPE == 0 {
		return nil
	}
	if s.Layout != RedisBloom {
		return fmt.Errorf("%w: bits per entry %v on a %s filter (only the RedisBloom layout has them)", ErrInvalidSize, s.BPE, s.Layout)
	}
	if !(s.BPE > 0 && s.BPE <= math.MaxFloat64) {
		return fmt.Errorf("%w: bits per entry %v", ErrInvalidSize, s.BPE)
	}
	return nil
}

// bpeSlack is how far (relatively) a recorded bits per entry may be from
// the one computed here for the same rate: the logarithms of two C
// libraries, or Go's, differ in the last bit or two, never more.
const bpeSlack = 1e-12

// checkRedisBloom is CheckRate for the RedisBloom layout: whether s is
// RedisBloom's geometry for N entries at rate P, as bloom_init makes it
// (its own consistency, not Bloomery's accuracy model): bits per entry
// those of P (up to the last bits of a logarithm), k = ⌈ln 2 · bpe⌉ (the
// check RedisBloom makes when it loads a dump), and the bits of N at that
// bpe. s must be valid.
func (s Sizing) checkRedisBloom() error {
	bpe, want := s.bitsPerEntry(), redisBloomBPE(s.P)
	var err error
	if math.Abs(bpe-want) > bpeSlack*want {
		err = fmt.Errorf("bits per entry %v, RedisBloom's for p=%g is %v", bpe, s.P, want)
	} else if k := redisBloomHashes(bpe); s.K != k {
		err = fmt.Errorf("k = %d, RedisBloom's for %v bits per entry is %d", s.K, bpe, k)
	} else if bits, _ := redisBloomBits(s.N, bpe); s.Bits != bits {
		err = fmt.Errorf("%d bits, RedisBloom's for n=%d at %v bits per entry is %d", s.Bits, s.N, bpe, bits)
	}
	if err != nil {
		return fmt.Errorf("%w: not RedisBloom's geometry: %w", ErrGeometry, err)
	}
	return nil
}

// addRedisBloom sets h's k bits and reports whether any was unset.
func (f *Filter) addRedisBloom(h Hash) bool {
	m := f.ext.probeBits(f.m())
	var changed uint64
	for i := range uint64(f.k) {
		x := (h.H1 + i*h.H2) % m
		bit := uint64(1) << (x & 63)
		changed |= bit &^ f.words()[x>>6]
		f.words()[x>>6] |= bit
	}
	return changed != 0
}

// testRedisBloom stops at the first unset bit, as RedisBloom does.
func (f *Filter) testRedisBloom(h Hash) bool {
	m := f.ext.probeBits(f.m())
	for i := range uint64(f.k) {
		x := (h.H1 + i*h.H2) % m
		if f.words()[x>>6]&(1<<(x&63)) == 0 {
			return false
		}
	}
	return true
}

// addRedisBloomAtomic is addRedisBloom with atomic OR (WithConcurrent).
func (f *Filter) addRedisBloomAtomic(h Hash) bool {
	m, changed := f.ext.probeBits(f.m()), false
	for i := range uint64(f.k) {
		changed = orBit(f.words(), (h.H1+i*h.H2)%m) || changed
	}
	return changed
}

// testRedisBloomAtomic is testRedisBloom with atomic loads.
func (f *Filter) testRedisBloomAtomic(h Hash) bool {
	m := f.ext.probeBits(f.m())
	for i := range uint64(f.k) {
		x := (h.H1 + i*h.H2) % m
		if atomic.LoadUint64(&f.words()[x>>6])&(1<<(x&63)) == 0 {
			return false
		}
	}
	return true
}
