package bloom

// DefaultMaxBytes is the largest bit array New and the decoders allocate
// unless WithMaxBytes says otherwise: 16 GiB, enough for 10^9 items at
// p = 1e-7 in the blocked layout (6.5 GB).
const DefaultMaxBytes = 16 << 30

// Option configures New, NewSized and Load.
type Option func(*config)

type config struct {
	layout     Layout
	keyed      bool
	key        [16]byte
	concurrent bool
	maxBytes   uint64
}

func newConfig(opts []Option) config {
	c := config{layout: Blocked, maxBytes: DefaultMaxBytes}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithLayout selects the layout. default: Blocked.
func WithLayout(l Layout) Option { return func(c *config) { c.layout = l } }

// WithKey hashes items with SipHash-2-4 under this secret 128-bit key
// instead of the unkeyed XXH3, so that whoever chooses the items cannot
// choose collisions. Keep the key: a keyed filter can be read back only
// with it. default: unkeyed.
func WithKey(key [16]byte) Option {
	return func(c *config) { c.keyed, c.key = true, key }
}

// WithConcurrent makes Add, AddMany, AddHash, Test, TestMany and TestHash
// safe to call from many goroutines at once, using atomic OR on 64-bit
// words and no locks. default: off (Add needs exclusive access).
func WithConcurrent() Option { return func(c *config) { c.concurrent = true } }

// WithMaxBytes sets the largest bit array that may be allocated, in bytes.
// default: DefaultMaxBytes.
func WithMaxBytes(n uint64) Option { return func(c *config) { c.maxBytes = n } }
