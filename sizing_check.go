package bloom

import (
	"errors"
	"fmt"
	"math"
)

// ErrGeometry reports a geometry (m, k) that cannot hold its stated
// capacity at its stated rate: the model's expected rate after N items is
// above P (see Sizing.CheckRate).
var ErrGeometry = errors.New("bloom: geometry cannot hold its capacity at its rate")

// rateTolerance is how far above its target P a geometry's expected rate
// at N may be and still pass CheckRate, as a fraction of min(P, 1−P):
// room for a model computed by another version, never for a lie (a
// filter sized by Size has its rate well below P, by its margin).
const rateTolerance = 0.01

// CheckRate reports whether s holds its rate: the model's expected rate
// after N items, ExpectedFPR(Layout, Bits, K, N), is at most
// P + 1%·min(P, 1−P). Every Sizing from Size passes (it keeps the rate
// below P by its margin); decoders and NewSized refuse one that fails,
// with an error wrapping ErrGeometry. It takes microseconds (the blocked
// model's tables are built once per k and kept). s must be valid
// (Validate).
//
// For the RedisBloom layout it checks RedisBloom's own consistency, not
// a rate: that s is the geometry RedisBloom gives N entries at error P
// (bits per entry BPE those of P up to the last bits of a logarithm,
// K = ⌈ln 2 · BPE⌉, and Bits from N and BPE), which a RedisBloom-layout
// filter has whatever rate that gives.
func (s Sizing) CheckRate() error {
	if s.Layout == RedisBloom {
		return s.checkRedisBloom()
	}
	f := ExpectedFPR(s.Layout, s.Bits, s.K, s.N)
	if limit := s.P + rateTolerance*math.Min(s.P, 1-s.P); !(f <= limit) {
		return fmt.Errorf("%w: %s m=%d k=%d has an expected rate of %.3g at n=%d, above p=%g",
			ErrGeometry, s.Layout, s.Bits, s.K, f, s.N, s.P)
	}
	return nil
}

// headerSizing is the geometry in kind-1 header h, checked: a valid
// sizing that holds its rate, and a count of items that reported new no
// larger than the bits (each such item set at least one bit). A
// sub-filter of a RedisBloom chain (inChain, layout 3) is checked by
// RedisBloom's rules instead (redisbloom_chain.go): it may come from a
// dump header made by hand. Errors wrap ErrFormat and the sentinel of
// what is wrong.
func headerSizing(h header, inChain bool) (Sizing, error) {
	s := Sizing{Layout: Layout(h.layout), N: h.n, P: h.p, Bits: h.m, K: h.k, BPE: h.bpe}
	if s.Layout == RedisBloom && inChain {
		if err := checkRBSub(s, h.n2); err != nil {
			return Sizing{}, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		return s, nil
	}
	if s.Layout == RedisBloom && (h.n2 != 0 || HashID(h.hash) != HashMurmur64A) {
		return Sizing{}, fmt.Errorf("%w: a RedisBloom-layout filter with n2 %d and hash %s (only a RedisBloom chain has them)",
			ErrFormat, h.n2, HashID(h.hash))
	}
	err := checkSizing(s)
	if err == nil && s.Layout == RedisBloom && s.BPE == 0 {
		err = fmt.Errorf("%w: a RedisBloom-layout filter without its bits per entry", ErrInvalidSize)
	}
	if err == nil {
		err = s.CheckRate()
	}
	if err == nil && h.count > s.Bits {
		err = fmt.Errorf("count %d larger than the %d bits can record", h.count, s.Bits)
	}
	if err != nil {
		return Sizing{}, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return s, nil
}
