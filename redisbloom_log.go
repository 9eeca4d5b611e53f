package bloom

import (
	"math"
	"math/big"
	"sync"
	"sync/atomic"
)

// RedisBloom computes its bits per entry with the C library's log, and
// the last bit of it decides, now and then, a floor or a ceiling of its
// sizing. Go's math.Log differs from glibc's in the last bit for about 3%
// of arguments (0.8% of the decimal error rates people type); the
// correctly rounded logarithm differs from glibc's for about 0.03% (glibc
// itself errs by up to 0.52 units in the last place). So Bloomery takes
// the correctly rounded one, and carries the bits per entry RedisBloom
// recorded with every filter it imports (docs/DESIGN.md §10).

// bpeCache memoises RedisBloom's bits per entry per rate, as sizeCache
// memoises Size: a server makes filters at the same few rates over and
// over, and the logarithm costs microseconds. Direct-mapped slots of
// immutable entries behind atomic pointers: no lock, bounded memory, a
// miss overwrites its slot. Each entry also holds the filterExt that
// filters of that rate share.
var bpeCache [1 << bpeCacheBits]atomic.Pointer[bpeEntry]

const bpeCacheBits = 8

type bpeEntry struct {
	p   float64
	ext filterExt // HashMurmur64A with p's bits per entry; never changed
}

// redisBloomRate returns the memoised entry of error rate p.
func redisBloomRate(p float64) *bpeEntry {
	slot := &bpeCache[math.Float64bits(p)*0x9e3779b97f4a7c15>>(64-bpeCacheBits)]
	if e := slot.Load(); e != nil && e.p == p {
		return e
	}
	e := &bpeEntry{p: p, ext: filterExt{id: HashMurmur64A, bpe: math.Abs(-(lnRounded(p) / rbLn2Squared))}}
	slot.Store(e)
	return e
}

// redisBloomBPE is RedisBloom's bits per entry for error rate p,
// |−ln p / ln²2|, with the correctly rounded logarithm (lnRounded), which
// is glibc's for all but about 0.03% of rates.
func redisBloomBPE(p float64) float64 { return redisBloomRate(p).ext.bpe }

// lnPrec is the working precision of lnRounded: enough that the result
// rounds correctly unless the exact logarithm lies within about 2^-120
// (relative) of a point halfway between two float64s.
const lnPrec = 128

// ln2Big is ln 2 at lnPrec bits: 2·atanh(1/3).
var ln2Big = sync.OnceValue(func() *big.Float {
	third := new(big.Float).SetPrec(lnPrec).SetInt64(1)
	third.Quo(third, new(big.Float).SetPrec(lnPrec).SetInt64(3))
	return twoAtanh(third)
})

// lnRounded is the natural logarithm of a finite x > 0, rounded to the
// nearest float64 (see lnPrec), subnormal x included. It takes a few
// microseconds: it is for sizing, not for a hot path.
func lnRounded(x float64) float64 {
	if !(x > 0 && x <= math.MaxFloat64) {
		return math.Log(x) // −Inf, NaN or +Inf: the series would not end
	}
	frac, exp := math.Frexp(x) // x = frac·2^exp, frac in [0.5, 1)
	if frac < math.Sqrt2/2 {
		frac, exp = frac*2, exp-1 // frac in [1/√2, √2): |z| ≤ 0.172 below
	}
	if frac == 1 && exp == 0 {
		return 0
	}
	m := new(big.Float).SetPrec(lnPrec).SetFloat64(frac)
	num := new(big.Float).SetPrec(lnPrec).Sub(m, big.NewFloat(1))
	den := new(big.Float).SetPrec(lnPrec).Add(m, big.NewFloat(1))
	r := twoAtanh(num.Quo(num, den)) // ln frac = 2·atanh((frac−1)/(frac+1))
	e := new(big.Float).SetPrec(lnPrec).SetInt64(int64(exp))
	r.Add(r, e.Mul(e, ln2Big()))
	f, _ := r.Float64()
	return f
}

// twoAtanh is 2·atanh(z) = 2·(z + z³/3 + z⁵/5 + …) at lnPrec bits, for
// |z| < 1/2 (each term then at least 2 bits below the one before).
func twoAtanh(z *big.Float) *big.Float {
	sum := new(big.Float).SetPrec(lnPrec).Set(z)
	if z.Sign() == 0 {
		return sum
	}
	z2 := new(big.Float).SetPrec(lnPrec).Mul(z, z)
	pow := new(big.Float).SetPrec(lnPrec).Set(z)
	term := new(big.Float).SetPrec(lnPrec)
	div := new(big.Float).SetPrec(lnPrec)
	for n := int64(3); ; n += 2 {
		pow.Mul(pow, z2)
		term.Quo(pow, div.SetInt64(n))
		sum.Add(sum, term)
		if term.MantExp(nil) < sum.MantExp(nil)-lnPrec-2 {
			break
		}
	}
	return sum.Mul(sum, big.NewFloat(2))
}
