package bloom

import (
	"fmt"
	"sync/atomic"
)

// Counting is a counting Bloom filter: a Bloom filter whose slots are
// 4-bit counters instead of bits, so that items can be removed as well as
// added, and Count estimates how many times an item was added.
//
// Layout: classic only. An item's k counters are k independent positions
// mulhi(w_i, m) in the whole array of m counters (the probe words w_i of
// the classic Filter layout), packed 16 to a uint64 word: counter i is bits
// 4(i%16) … 4(i%16)+3 of word i/16. A counter is "set" when it is not
// zero, so the false-positive rate is exactly a classic Bloom filter's over
// m slots, and the filter is sized with that exact model: m counters and k
// as New(n, p, WithLayout(Classic)) chooses bits, so 4× its memory.
//
// A blocked layout (all k counters in one or two cache lines) is not
// offered, because at the same rate it costs much more memory: a 64-byte
// line holds only 128 counters, against 512 bits. From the exact blocked
// model of docs/DESIGN.md §3 with 128- or 256-counter blocks (the last column:
// two independently chosen 128-counter blocks, k/2 probes in each), the
// counters per key needed (best k), without sizing margin:
//
//	p       classic      1 line (128)      2 adjacent lines (256)   2 independent lines (2×128)
//	0.1     4.81 (3)     4.92 (3) +2.3%    4.86 (3) +1.1%           4.86 (4) +1.1%
//	0.01    9.59 (7)    10.85 (6) +13%    10.22 (6) +6.6%           9.84 (6) +2.6%
//	0.001  14.38 (10)   19.01 (8) +32%    16.70 (9) +16%           15.39 (10) +7.0%
//
// Concurrency: by default Test, Count and the read-only methods may run
// from many goroutines at once, but Add and Remove need exclusive access. A
// filter made WithConcurrent also allows Add, Remove, Test and Count from
// many goroutines: each counter is updated with a compare-and-swap loop on
// its word. Each counter update is atomic, but an item's k updates are not
// one atomic step: a Remove racing with an Add of the same item is
// linearizable per counter only (a concurrent Test may see some counters
// already changed and others not). ReadFrom and UnmarshalBinary always need
// exclusive access.
//
// Saturation: a counter stops at 15 and is never decremented after that,
// so it can no longer undercount: every item using it keeps testing
// present (no false negatives), at the price that the counter never goes
// back to zero. Remove only items that were added: removing an item that was
// never added but tests present (a false positive) decrements other items'
// counters and can make them false negatives; that is inherent to counting
// Bloom filters.
type Counting struct {
	words []uint64 // counters, 16 per word, 64-byte aligned
	m     uint64   // counters
	k     uint32

	concurrent bool
	ext        *filterExt // the key; nil when unkeyed

	n uint64  // expected items (capacity)
	p float64 // target false-positive rate at n

	adds, removes uint64             // exclusive mode
	stripes       *[8]countingStripe // concurrent mode
}

// countingStripe counts Adds and successful Removes of one eighth of the
// hash space, on a cache line of its own.
type countingStripe struct {
	adds, removes uint64
	_             [48]byte
}

// Counter geometry.
const (
	counterBits     = 4
	counterMax      = 1<<counterBits - 1 // 15: saturated
	countersPerWord = 64 / counterBits   // 16
)

// NewCounting returns an empty counting filter for n expected distinct
// items at a false-positive rate of at most p: m counters and k probes as
// the classic layout sizes bits (exact model, margin p^1.008). For
// n = 10^6 that is 4.85, 9.67 and 14.49 counters per key (2.42, 4.83 and
// 7.25 bytes) at p = 0.1, 0.01 and 0.001; small filters get a little more.
// It is 1.008-1.012× the memory of BoomFilters' counting filter, whose
// textbook size m = n·ln(1/p)/ln²2 with k = ⌈log2(1/p)⌉ has an expected
// rate above p (1.026 p at p = 0.1, 1.004 p at 0.01).
//
// Options: WithKey, WithConcurrent, WithMaxBytes (which bounds the
// counter array, m/2 bytes); WithLayout(Classic) is accepted, any other
// layout is an error (see Counting for why there is no blocked layout).
func NewCounting(n uint64, p float64, opts ...Option) (*Counting, error) {
	c, err := countingConfig(opts)
	if err != nil {
		return nil, err
	}
	s, err := Size(n, p, Classic)
	if err != nil {
		return nil, err
	}
	return newCounting(s.N, s.P, s.Bits, s.K, c)
}

// countingConfig applies opts; the layout must be unset or Classic.
func countingConfig(opts []Option) (config, error) {
	c := config{maxBytes: DefaultMaxBytes} // layout 0: not chosen
	for _, o := range opts {
		c = o(c)
	}
	switch c.layout {
	case 0, Classic:
	case Blocked:
		return c, fmt.Errorf("%w: counting filters have only the classic layout (a blocked one needs +13%% counters at p = 0.01, +32%% at 0.001)", ErrInvalidLayout)
	default:
		return c, fmt.Errorf("%w: %d", ErrInvalidLayout, c.layout)
	}
	c.layout = Classic
	return c, nil
}

// newCounting allocates a filter of m counters (a positive multiple of
// 64) and k probes, checking its size against c's limit.
func newCounting(n uint64, p float64, m uint64, k uint32, c config) (*Counting, error) {
	size := m / 2
	if size > c.maxBytes || size > maxArrayBytes {
		return nil, fmt.Errorf("%w: counting filter for %d items at p=%g needs %d bytes, limit %d (raise it with WithMaxBytes)",
			ErrTooLarge, n, p, size, c.maxBytes)
	}
	f := &Counting{
		words:      alignedWords(m / countersPerWord),
		m:          m,
		k:          k,
		concurrent: c.concurrent,
		n:          n,
		p:          p,
	}
	f.ext = c.ext(Sizing{Layout: Classic})
	if c.concurrent {
		f.stripes = new([8]countingStripe)
	}
	return f, nil
}

// Hash returns the filter's hash of item: XXH3-128, or SipHash-2-4-128
// under the filter's key.
func (c *Counting) Hash(item []byte) Hash { return c.ext.hash(item) }

// Add increments item's k counters (each distinct counter once, however
// many of the k probes land on it), each saturating at 15. Add never
// retains or modifies item.
func (c *Counting) Add(item []byte) { c.AddHash(c.Hash(item)) }

// AddString is Add for a string, without copying it.
func (c *Counting) AddString(s string) { c.AddHash(c.Hash(bytesOf(s))) }

// Remove decrements item's counters and reports true if all of them were
// non-zero (the item tests present). If any is zero the item is absent:
// Remove changes nothing and reports false. A saturated counter (15) is
// never decremented. Remove only items that were added (see Counting).
func (c *Counting) Remove(item []byte) bool { return c.RemoveHash(c.Hash(item)) }

// RemoveString is Remove for a string, without copying it.
func (c *Counting) RemoveString(s string) bool { return c.RemoveHash(c.Hash(bytesOf(s))) }

// Test reports whether item may be in the set: whether all its counters
// are non-zero. False means definitely not; true may be a false positive,
// with about the filter's rate.
func (c *Counting) Test(item []byte) bool { return c.TestHash(c.Hash(item)) }

// TestString is Test for a string, without copying it.
func (c *Counting) TestString(s string) bool { return c.TestHash(c.Hash(bytesOf(s))) }

// Count estimates how many times item was added (net of removals): the
// smallest of its counters. It is at least the true multiplicity as long
// as that is below 15 and only added items were removed; it is 15 for any
// item whose counters all saturated, and may exceed the true multiplicity
// where other items share its counters (0 < Count for a false positive).
func (c *Counting) Count(item []byte) uint { return c.CountHash(c.Hash(item)) }

// CountString is Count for a string, without copying it.
func (c *Counting) CountString(s string) uint { return c.CountHash(c.Hash(bytesOf(s))) }

// probes writes the distinct counter indices of h into dst and returns
// them: probe i is mulhi(w_i, m) with w_i the classic layout's probe word
// (classicWord); a probe that repeats an earlier one is dropped, so Add
// and Remove change each counter at most once.
func (c *Counting) probes(h Hash, dst *[MaxK]uint64) []uint64 {
	n := 0
next:
	for i := range c.k {
		x := mulhi(classicWord(h, i), c.m)
		for _, y := range dst[:n] {
			if x == y {
				continue next
			}
		}
		dst[n] = x
		n++
	}
	return dst[:n]
}

// AddHash is Add for an item with hash h (see Filter.AddHash).
func (c *Counting) AddHash(h Hash) {
	var buf [MaxK]uint64
	idx := c.probes(h, &buf)
	if c.concurrent {
		for _, x := range idx {
			incAtomic(&c.words[x/countersPerWord], x%countersPerWord*counterBits)
		}
		atomic.AddUint64(&c.stripes[h.H2>>61].adds, 1)
		return
	}
	for _, x := range idx {
		inc(&c.words[x/countersPerWord], x%countersPerWord*counterBits)
	}
	c.adds++
}

// RemoveHash is Remove for an item with hash h.
func (c *Counting) RemoveHash(h Hash) bool {
	var buf [MaxK]uint64
	idx := c.probes(h, &buf)
	if c.concurrent {
		for _, x := range idx {
			if atomic.LoadUint64(&c.words[x/countersPerWord])>>(x%countersPerWord*counterBits)&counterMax == 0 {
				return false
			}
		}
		for _, x := range idx {
			decAtomic(&c.words[x/countersPerWord], x%countersPerWord*counterBits)
		}
		atomic.AddUint64(&c.stripes[h.H2>>61].removes, 1)
		return true
	}
	for _, x := range idx {
		if c.words[x/countersPerWord]>>(x%countersPerWord*counterBits)&counterMax == 0 {
			return false
		}
	}
	for _, x := range idx {
		dec(&c.words[x/countersPerWord], x%countersPerWord*counterBits)
	}
	c.removes++
	return true
}

// TestHash reports whether an item with hash h may be in the set. It
// stops at the first zero counter.
func (c *Counting) TestHash(h Hash) bool {
	for i := range c.k {
		if c.counter(mulhi(classicWord(h, i), c.m)) == 0 {
			return false
		}
	}
	return true
}

// CountHash is Count for an item with hash h.
func (c *Counting) CountHash(h Hash) uint {
	low := uint64(counterMax)
	for i := range c.k {
		low = min(low, c.counter(mulhi(classicWord(h, i), c.m)))
		if low == 0 {
			break
		}
	}
	return uint(low)
}

// counter reads counter x, atomically in a concurrent filter.
func (c *Counting) counter(x uint64) uint64 {
	var w uint64
	if c.concurrent {
		w = atomic.LoadUint64(&c.words[x/countersPerWord])
	} else {
		w = c.words[x/countersPerWord]
	}
	return w >> (x % countersPerWord * counterBits) & counterMax
}

// inc increments the counter at bit shift s of *w unless it is saturated:
// adding 1<<s to a nibble below 15 never carries out of it.
func inc(w *uint64, s uint64) {
	if *w>>s&counterMax != counterMax {
		*w += 1 << s
	}
}

// dec decrements the counter at bit shift s of *w unless it is 0 or
// saturated (15).
func dec(w *uint64, s uint64) {
	if v := *w >> s & counterMax; v != 0 && v != counterMax {
		*w -= 1 << s
	}
}

// incAtomic is inc as a compare-and-swap loop.
func incAtomic(w *uint64, s uint64) {
	for {
		old := atomic.LoadUint64(w)
		if old>>s&counterMax == counterMax || atomic.CompareAndSwapUint64(w, old, old+1<<s) {
			return
		}
	}
}

// decAtomic is dec as a compare-and-swap loop. A counter found at 0 (a
// concurrent Remove got there first) is left at 0.
func decAtomic(w *uint64, s uint64) {
	for {
		old := atomic.LoadUint64(w)
		if v := old >> s & counterMax; v == 0 || v == counterMax || atomic.CompareAndSwapUint64(w, old, old-1<<s) {
			return
		}
	}
}

// Inserted is the number of Adds minus the number of Removes that
// reported true since the filter was made (or the count read with it),
// and 0 if there were more such Removes than Adds.
func (c *Counting) Inserted() uint64 {
	adds, removes := c.adds, c.removes
	if c.stripes != nil {
		adds, removes = 0, 0
		for i := range c.stripes {
			adds += atomic.LoadUint64(&c.stripes[i].adds)
			removes += atomic.LoadUint64(&c.stripes[i].removes)
		}
	}
	if removes > adds {
		return 0
	}
	return adds - removes
}

func (c *Counting) setInserted(v uint64) {
	if c.stripes != nil {
		c.stripes[0].adds = v
		return
	}
	c.adds = v
}

// Cap is the number of distinct items the filter was sized for.
func (c *Counting) Cap() uint64 { return c.n }

// TargetFPR is the false-positive rate the filter was sized for at Cap items.
func (c *Counting) TargetFPR() float64 { return c.p }

// K is the number of counters probed per item.
func (c *Counting) K() uint32 { return c.k }

// Counters is the number of 4-bit counters, m.
func (c *Counting) Counters() uint64 { return c.m }

// Bytes is the size of the counter array in bytes: m/2.
func (c *Counting) Bytes() uint64 { return c.m / 2 }

// Layout is Classic: the only layout of counting filters.
func (c *Counting) Layout() Layout { return Classic }

// HashID names the filter's hash function.
func (c *Counting) HashID() HashID { return c.ext.hashID() }

// Keyed reports whether the filter hashes with a secret key.
func (c *Counting) Keyed() bool { return c.ext.keyed() }

// Concurrent reports whether the filter was made WithConcurrent.
func (c *Counting) Concurrent() bool { return c.concurrent }
