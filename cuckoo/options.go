package cuckoo

import "unsafe"

// RedisBloom's defaults and limits (docs/CUCKOO.md §2).
const (
	DefaultCapacity      = 1024 // CF.ADD and CF.INSERT create filters of this capacity
	DefaultBucketSize    = 2
	DefaultMaxIterations = 20
	DefaultExpansion     = 1
	MaxBucketSize        = 255
	MaxIterationsLimit   = 65535
	MaxExpansion         = 32768
	// MaxFilters is the most sub-filters a filter can have; a growth
	// beyond it fails with ErrTooLarge.
	MaxFilters = 65535
	// MaxBuckets is the most buckets one sub-filter can have (2⁵⁶ − 1).
	MaxBuckets = 1<<56 - 1
	// DefaultMaxBytes is the most bytes all sub-filters of a filter may
	// take together unless WithMaxBytes says otherwise: 16 GiB.
	DefaultMaxBytes = 16 << 30
)

// Option configures New and the loaders. (It maps a configuration to
// another by value, so that applying options allocates nothing.)
type Option func(config) config

type config struct {
	bucketSize    uint64
	maxIterations uint64
	expansion     uint64
	maxBytes      uint64
}

func newConfig(opts []Option) config {
	c := config{
		bucketSize:    DefaultBucketSize,
		maxIterations: DefaultMaxIterations,
		expansion:     DefaultExpansion,
		maxBytes:      DefaultMaxBytes,
	}
	for _, o := range opts {
		c = o(c)
	}
	return c
}

// WithBucketSize sets the slots per bucket, 1 to MaxBucketSize: more
// slots fill fuller before growing, at a higher false-positive rate.
// default: 2 (DefaultBucketSize). New only.
func WithBucketSize(n uint64) Option {
	return func(c config) config { c.bucketSize = n; return c }
}

// WithMaxIterations sets how many kicks an insert tries in the newest
// sub-filter before it grows the filter, 1 to MaxIterationsLimit.
// default: 20 (DefaultMaxIterations). New only.
func WithMaxIterations(n uint64) Option {
	return func(c config) config { c.maxIterations = n; return c }
}

// WithExpansion sets the growth factor, 0 to MaxExpansion: each new
// sub-filter has this many times the buckets of the one before, after
// rounding up to a power of two as RedisBloom does (3 becomes 4); 0
// makes a filter that never grows and fails with ErrFull instead.
// default: 1 (DefaultExpansion). New only.
func WithExpansion(n uint64) Option {
	return func(c config) config { c.expansion = n; return c }
}

// WithMaxBytes sets the most bytes all sub-filters may take together:
// New, a growth and the loaders refuse more with ErrTooLarge before
// allocating. default: DefaultMaxBytes.
func WithMaxBytes(n uint64) Option {
	return func(c config) config { c.maxBytes = n; return c }
}

// bytesOf is the bytes of s, without a copy; they must not be changed.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
