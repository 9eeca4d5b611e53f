package bench

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
)

// Seed streams: the key sets are independent PCG streams of one seed.
const (
	StreamInserted = 1 // keys added to the filters
	StreamQueries  = 2 // query mix: which inserted keys, which absent keys
	StreamProbes   = 3 // never-inserted keys for the false-positive rate
)

// NewRand returns a deterministic generator for one stream of seed.
func NewRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// FillKeys fills buf (a multiple of KeySize bytes) with random keys. The
// top bit of the first byte is 0 for keys meant to be inserted and 1 for
// absent keys, so the two sets are disjoint by construction.
func FillKeys(r *rand.Rand, buf []byte, absent bool) {
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		binary.LittleEndian.PutUint64(buf[i:], r.Uint64())
		binary.LittleEndian.PutUint64(buf[i+8:], r.Uint64())
		if absent {
			buf[i] |= 0x80
		} else {
			buf[i] &^= 0x80
		}
	}
}

// Keys returns n random keys to insert, in one flat buffer.
func Keys(seed uint64, n int) []byte {
	buf := make([]byte, n*KeySize)
	FillKeys(NewRand(seed, StreamInserted), buf, false)
	return buf
}

// Split returns slices of buf, one per KeySize-byte key, capacity-limited.
func Split(buf []byte) [][]byte {
	out := make([][]byte, len(buf)/KeySize)
	for i := range out {
		j := i * KeySize
		out[i] = buf[j : j+KeySize : j+KeySize]
	}
	return out
}

// Queries returns count query keys in random order, half of them (rounded
// down) copied from inserted (a flat key buffer) at random and the rest
// never inserted, plus the present ones on their own. The keys live in one
// fresh flat buffer in query order, so a pass reads them sequentially.
func Queries(seed uint64, inserted []byte, count int) (all, present [][]byte) {
	r := NewRand(seed, StreamQueries)
	n := len(inserted) / KeySize
	kind := make([]bool, count) // true: present
	for i := range count / 2 {
		kind[i] = true
	}
	r.Shuffle(count, func(i, j int) { kind[i], kind[j] = kind[j], kind[i] })
	buf := make([]byte, count*KeySize)
	all = Split(buf)
	present = make([][]byte, 0, count/2)
	for i, k := range all {
		if kind[i] {
			j := r.IntN(n) * KeySize
			copy(k, inserted[j:j+KeySize])
			present = append(present, k)
		} else {
			FillKeys(r, k, true)
		}
	}
	return all, present
}

// Query sets of QuerySets, in order.
const (
	SetMixed   = iota // half present, half absent, shuffled
	SetPresent        // the present half alone
	SetAbsent         // the absent half alone
)

// QuerySets returns count query keys (Queries) and their present and
// absent halves alone, indexed by SetMixed, SetPresent and SetAbsent.
func QuerySets(seed uint64, inserted []byte, count int) [][][]byte {
	mixed, present := Queries(seed, inserted, count)
	return [][][]byte{SetMixed: mixed, SetPresent: present, SetAbsent: AbsentKeys(mixed)}
}

// AbsentKeys returns the never-inserted keys of a query mix: those with
// the top bit of the first byte set (see FillKeys).
func AbsentKeys(q [][]byte) [][]byte {
	var out [][]byte
	for _, k := range q {
		if IsAbsent(k) {
			out = append(out, k)
		}
	}
	return out
}

// IsAbsent reports whether key was made by FillKeys never to be inserted
// (the top bit of its first byte is set).
func IsAbsent(key []byte) bool { return key[0]&0x80 != 0 }

// ProbeCount is the number of absent keys to probe for the false-positive
// rate of a filter for p: at least minProbes and at least expectFP/p (so
// that about expectFP false positives are expected), but at most
// maxProbes.
func ProbeCount(p float64, minProbes, expectFP, maxProbes uint64) uint64 {
	n := float64(minProbes)
	if want := math.Ceil(float64(expectFP) / p); want > n {
		n = want
	}
	if maxProbes > 0 && n > float64(maxProbes) {
		n = float64(maxProbes)
	}
	return uint64(n)
}

// Z99 is the standard normal quantile for a one-sided 99% bound.
const Z99 = 2.3263478740408408

// WilsonUpper is the one-sided Wilson score upper bound on a binomial
// proportion after x successes in n trials, for normal quantile z (Z99
// for 99% confidence).
func WilsonUpper(x, n uint64, z float64) float64 {
	if n == 0 {
		return 1
	}
	nf := float64(n)
	ph := float64(x) / nf
	z2 := z * z
	centre := ph + z2/(2*nf)
	spread := z * math.Sqrt(ph*(1-ph)/nf+z2/(4*nf*nf))
	return min(1, (centre+spread)/(1+z2/nf))
}

// Median returns the median of xs (the mean of the middle two for even
// lengths), or NaN for none. It does not modify xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
