package bloom

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// RedisBloom's chains as RedisBloom itself takes them: whatever its
// BF.LOADCHUNK accepts, a RedisBloom-layout filter holds and answers as
// RedisBloom does (docs/DESIGN.md §10, "Headers made by hand"). RedisBloom
// checks little when it loads a dump header: each sub-filter's error in
// (0, 1), bits = bytes·8, n2 ≤ 63 and bits ≥ 2^n2, hashes = ⌈ln 2 · bpe⌉,
// the item counts summing to the total, the option bits known. Its own
// commands only make chains of one shape (64-bit hashing, sizes from
// capacity and error, each sub-filter full before the next); a header
// made by hand, or by an older RedisBloom, may have any geometry those
// checks allow: bits per entry not those of its error, no hashes at all,
// more items than capacity, growth 0, 32-bit hashing (no FORCE64),
// power-of-two sizing (n2, ENTS_IS_BITS, no NOROUND). Such a chain keeps
// every field as recorded (its dump header comes back byte for byte),
// probes as RedisBloom does (modulo 2^n2 when n2 is set, the 32-bit hash
// without FORCE64), and grows as RedisBloom does (SBChain_Add: the next
// sub-filter from the last one's capacity × growth and error × 0.5, sized
// by bloom_init with the chain's options).
//
// Bloomery adds two limits of its own: a sub-filter's bits must be a
// multiple of 64 (RedisBloom's are a multiple of 8; its commands only
// make multiples of 64), and its capacity at least 1; and the capacities
// of a chain may not sum past 2^63−1.

// ErrCannotGrow reports an Add of a new item to a full scaling
// RedisBloom-layout filter whose next sub-filter RedisBloom's rules
// cannot make: growth 0, or a capacity or error rate RedisBloom's
// bloom_init refuses (only dump headers made by hand have them).
// RedisBloom answers "ERR problem inserting into filter" for that item
// and goes on with the next ones; so may the caller.
var ErrCannotGrow = errors.New("bloom: the RedisBloom filter cannot grow (growth 0, or a sub-filter RedisBloom cannot make)")

// nonScaling reports whether s refuses new items past its capacity with
// ErrFull: expansion 0, or in the RedisBloom layout its NO_SCALING option
// (a scaling RedisBloom chain of growth 0 fails with ErrCannotGrow).
func (s *Scalable) nonScaling() bool {
	if s.prm.rb {
		return s.prm.rbOptions&rbOptNoScaling != 0
	}
	return s.prm.s == 0
}

// rbParams are the growth parameters of a RedisBloom chain with growth,
// options and first sub-filter (capacity n0, error e0): RedisBloom's
// split, expansion growth (0 when non-scaling) and the compound rate its
// commands would have asked for (2·e0, e0 when non-scaling; above 1 for
// some headers made by hand).
func rbParams(growth, options uint32, e0 float64, maxBytes uint64) growthParams {
	prm := growthParams{p: e0 * 2, s: uint64(growth), r: 0.5, f: 0.5, maxBytes: maxBytes, layout: RedisBloom,
		rb: true, rbGrowth: growth, rbOptions: options}
	if options&rbOptNoScaling != 0 {
		prm.p, prm.s = e0, 0
	}
	return prm
}

// checkRBOptions checks a chain's options: known bits, and FORCE64 as
// its hash says.
func checkRBOptions(options uint32, hash HashID) error {
	if options&^rbOptKnown != 0 {
		return fmt.Errorf("unknown option bits %#x", options&^rbOptKnown)
	}
	if (options&rbOptForce64 != 0) != (hash == HashMurmur64A) {
		return fmt.Errorf("options %#x with hash %s", options, hash)
	}
	return nil
}

// rbHashOf is the hash of a chain with options: HashMurmur64A with
// FORCE64, else HashMurmur2.
func rbHashOf(options uint32) HashID {
	if options&rbOptForce64 != 0 {
		return HashMurmur64A
	}
	return HashMurmur2
}

// checkRBSub checks one RedisBloom sub-filter: RedisBloom's integrity
// checks (error, bits, n2, hashes), then Bloomery's limits (bits a
// multiple of 64, capacity at least 1). s.BPE may be 0 only with K 0.
func checkRBSub(s Sizing, n2 uint8) error {
	switch {
	case !(s.P > 0 && s.P < 1):
		return fmt.Errorf("error rate %v not in (0, 1)", s.P)
	case n2 > 63:
		return fmt.Errorf("n2 = %d above 63", n2)
	case n2 != 0 && s.Bits < 1<<n2:
		return fmt.Errorf("%d bits below 2^n2 = 2^%d", s.Bits, n2)
	case s.Bits == 0 || s.Bits%64 != 0:
		return fmt.Errorf("%w: %d bits, not a positive multiple of 64", ErrInvalidSize, s.Bits)
	case !rbHashesOf(s.BPE, s.K):
		return fmt.Errorf("%d hashes for %v bits per entry", s.K, s.BPE)
	case s.N == 0:
		return ErrInvalidCapacity
	}
	return nil
}

// rbHashesOf reports whether k is RedisBloom's hashes for bpe,
// (int)⌈ln 2 · bpe⌉, at most maxRedisBloomK.
func rbHashesOf(bpe float64, k uint32) bool {
	return k <= maxRedisBloomK && math.Ceil(rbLn2*bpe) == float64(k) // false for NaN and ±Inf
}

// rbExt is the filterExt of a RedisBloom sub-filter: the one shared by
// every sub-filter of its rate when it is what RedisBloom's commands
// make, its own otherwise.
func rbExt(hash HashID, p, bpe float64, n2 uint8) *filterExt {
	if e := redisBloomRate(p); hash == HashMurmur64A && n2 == 0 && bpe == e.ext.bpe {
		return &e.ext
	}
	return &filterExt{id: hash, bpe: bpe, n2: n2}
}

// rbNext sizes the sub-filter RedisBloom adds after last (SBChain_Add):
// capacity last's × growth, error last's × 0.5, sized by bloom_init with
// the chain's options. ErrCannotGrow where bloom_init refuses.
func (s *Scalable) rbNext(last *Filter) (Sizing, uint8, error) {
	hi, n := bits.Mul64(last.n, uint64(s.prm.rbGrowth))
	if hi != 0 {
		return Sizing{}, 0, fmt.Errorf("%w: capacity %d × growth %d", ErrTooLarge, last.n, s.prm.rbGrowth)
	}
	return rbInit(n, last.p*0.5, s.prm.rbOptions)
}

// rbInit is RedisBloom's bloom_init(entries n, error p, options): the
// geometry of a new sub-filter and its n2, or ErrCannotGrow where
// bloom_init refuses (n 0, p not in (0, 1), a power of two past 2^63),
// and ErrTooLarge for more than 2^63 bits.
func rbInit(n uint64, p float64, options uint32) (Sizing, uint8, error) {
	if n < 1 || !(p > 0 && p < 1) {
		return Sizing{}, 0, fmt.Errorf("%w: capacity %d at error %g", ErrCannotGrow, n, p)
	}
	bpe := redisBloomBPE(p)
	var m uint64
	var n2 uint8
	switch x := float64(n) * bpe; {
	case options&rbOptEntsIsBits != 0: // the capacity is a power of two of bits
		if n > 63 {
			return Sizing{}, 0, fmt.Errorf("%w: 2^%d bits", ErrCannotGrow, n)
		}
		n2, m = uint8(n), 1<<n
		n = uint64(float64(m) / bpe)
	case options&rbOptNoRound != 0: // what RedisBloom's commands make
		var ok bool
		if m, ok = redisBloomBits(n, bpe); !ok {
			return Sizing{}, 0, fmt.Errorf("%w: capacity %d at error %g", ErrTooLarge, n, p)
		}
	default: // the power of two above n·bpe, and the capacity it gives
		e := math.Logb(x)
		if e > 62 || math.IsInf(e, 0) || math.IsNaN(e) {
			return Sizing{}, 0, fmt.Errorf("%w: capacity %d at error %g", ErrCannotGrow, n, p)
		}
		n2, m = uint8(e+1), 1<<uint(e+1)
		n += uint64(float64(uint64(float64(m)-x)) / bpe)
	}
	if n == 0 {
		return Sizing{}, 0, fmt.Errorf("%w: no capacity in %d bits at error %g", ErrCannotGrow, m, p)
	}
	m = (m + 63) &^ 63
	k := math.Ceil(rbLn2 * bpe)
	if !(k <= maxRedisBloomK) {
		return Sizing{}, 0, fmt.Errorf("%w: %v hashes", ErrCannotGrow, k)
	}
	return Sizing{Layout: RedisBloom, N: n, P: p, Bits: m, K: uint32(k), BPE: bpe}, n2, nil
}
