package bloom

import "encoding/binary"

// DefaultMaxBytes is the largest bit array New and the decoders allocate
// unless WithMaxBytes says otherwise: 16 GiB, enough for 10^9 items at
// p = 1e-7 in the blocked layout (6.5 GB).
const DefaultMaxBytes = 16 << 30

// Option configures New, NewSized and Load. (It maps a configuration to
// another by value, so that applying options allocates nothing.)
type Option func(config) config

type config struct {
	layout     Layout
	keyed      bool
	key        [16]byte
	concurrent bool
	maxBytes   uint64
	growth     Growth // of a Scalable filter
	skipCRC    bool   // OpenFile: do not check the payload's CRC
	// words, when set, is the bit array initFilter gives the filter it
	// sets up instead of allocating one: the caller's, all zero
	// (StateLoader.LoadInto).
	words []uint64
}

// ext is what a filter of geometry s made with c holds beyond the
// common fields: its key when keyed, its bits per entry in the
// RedisBloom layout (s.BPE, or RedisBloom's for s.P when 0), else nil.
func (c config) ext(s Sizing) *filterExt {
	switch {
	case s.Layout == RedisBloom:
		if e := redisBloomRate(s.P); s.BPE == 0 || s.BPE == e.ext.bpe {
			return &e.ext // shared: it never changes
		}
		return &filterExt{id: HashMurmur64A, bpe: s.BPE}
	case c.keyed:
		k0, k1 := keyWords(c.key)
		return &filterExt{id: HashSipHash, k0: k0, k1: k1}
	}
	return nil
}

// keyConfig is the key of a filter as a config holds it.
func keyConfig(e *filterExt) (keyed bool, k [16]byte) {
	if !e.keyed() {
		return false, k
	}
	binary.LittleEndian.PutUint64(k[:8], e.k0)
	binary.LittleEndian.PutUint64(k[8:], e.k1)
	return true, k
}

func newConfig(opts []Option) config {
	c := config{layout: Blocked, maxBytes: DefaultMaxBytes}
	for _, o := range opts {
		c = o(c)
	}
	return c
}

// WithLayout selects the layout. default: Blocked.
func WithLayout(l Layout) Option {
	return func(c config) config { c.layout = l; return c }
}

// WithKey hashes items with SipHash-2-4 under this secret 128-bit key
// instead of the unkeyed XXH3, so that whoever chooses the items cannot
// choose collisions. Keep the key: a keyed filter can be read back only
// with it. The RedisBloom layout has RedisBloom's hash and refuses a key.
// default: unkeyed.
func WithKey(key [16]byte) Option {
	return func(c config) config { c.keyed, c.key = true, key; return c }
}

// WithConcurrent makes Add, AddMany, AddHash, Test, TestMany and TestHash
// safe to call from many goroutines at once, using atomic OR on 64-bit
// words and no locks. default: off (Add needs exclusive access).
func WithConcurrent() Option {
	return func(c config) config { c.concurrent = true; return c }
}

// WithMaxBytes sets the largest bit array that may be allocated, in bytes.
// default: DefaultMaxBytes.
func WithMaxBytes(n uint64) Option {
	return func(c config) config { c.maxBytes = n; return c }
}

// The growth rule of a Scalable filter (NewScalable, NewScalablePlan);
// other constructors ignore these options.

// WithExpansion sets the capacity growth factor s: each new sub-filter
// holds s times the items of the one before. default: 2; at most
// MaxExpansion.
func WithExpansion(s uint64) Option {
	return func(c config) config { c.growth.Expansion = s; return c }
}

// WithNonScaling makes the filter refuse new items beyond its capacity
// with ErrFull instead of growing. default: it grows.
func WithNonScaling() Option {
	return func(c config) config { c.growth.NonScaling = true; return c }
}

// WithTightening sets the error ratio r between consecutive sub-filters
// after the first, in (0, 1). default: 0.5.
func WithTightening(r float64) Option {
	return func(c config) config { c.growth.Tightening = r; return c }
}

// WithFirstShare sets the share f of the error budget given to the first
// sub-filter, in (0, 1). default: 0.9.
func WithFirstShare(f float64) Option {
	return func(c config) config { c.growth.FirstShare = f; return c }
}

// WithRedisBloomSplit gives the filter RedisBloom's error split: first
// share and tightening 0.5 (another value set for either is an error).
func WithRedisBloomSplit() Option {
	return func(c config) config { c.growth.RedisBloom = true; return c }
}

// WithGrowth sets the whole growth rule from g, replacing what earlier
// growth options set; zero fields take their defaults.
func WithGrowth(g Growth) Option {
	return func(c config) config { c.growth = g; return c }
}

// WithoutPayloadCRC makes OpenFile (and OpenAny, for a mapped kind-1
// file) open a filter file without checking the CRC-32C of its bit array,
// so that opening reads only the 64-byte header and the 8-byte trailer:
// constant time whatever the size, where the check reads the whole file
// once (at the speed of the page cache, or of the disk for a file not
// cached). The cost: a corrupted bit array is not detected and may give
// false negatives. The header CRC and every other check still apply.
// default: verify. Other constructors ignore it.
func WithoutPayloadCRC() Option {
	return func(c config) config { c.skipCRC = true; return c }
}
