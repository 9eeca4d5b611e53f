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
}

// sipKey is the key of c as a filter holds it, or nil when unkeyed.
func (c config) sipKey() *sipKey {
	if !c.keyed {
		return nil
	}
	k0, k1 := keyWords(c.key)
	return &sipKey{k0, k1}
}

// keyConfig is the key of a filter as a config holds it.
func keyConfig(key *sipKey) (keyed bool, k [16]byte) {
	if key == nil {
		return false, k
	}
	binary.LittleEndian.PutUint64(k[:8], key.k0)
	binary.LittleEndian.PutUint64(k[8:], key.k1)
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
// with it. default: unkeyed.
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
