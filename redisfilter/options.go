package redisfilter

import (
	"fmt"
	"time"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/cuckoo"
)

// Limits and defaults.
const (
	// MaxShardBytes is the largest shard: a Redis string holds 512 MiB.
	MaxShardBytes = 512 << 20
	// DefaultShardBytes is the default shard size.
	DefaultShardBytes = 256 << 20
	// DefaultMaxBytes bounds the total size of a filter Create makes.
	DefaultMaxBytes = 64 << 30
	// MaxOpsPerCommand bounds the bit operations in one BITFIELD command.
	MaxOpsPerCommand = 4096
	// TransferChunk is the bytes per command of Upload and Download.
	TransferChunk = 4 << 20
	// DefaultRefresh is how often a Filter re-reads its metadata, to follow
	// a rotation made by another client.
	DefaultRefresh = time.Second
)

// Option configures Create and Open.
type Option func(*options)

type options struct {
	layout     bloom.Layout
	key        *[16]byte
	shardBytes uint64
	maxBytes   uint64
	refresh    time.Duration
	growth     bloom.Growth
	cuckoo     []cuckoo.Option // a new Cuckoo's geometry
	mirrors    *Mirrors        // a Scalable's copies (scalable_mirror.go)
}

func newOptions(opts []Option) (options, error) {
	o := options{layout: bloom.Blocked, shardBytes: DefaultShardBytes, maxBytes: DefaultMaxBytes, refresh: DefaultRefresh}
	for _, f := range opts {
		f(&o)
	}
	if o.shardBytes == 0 || o.shardBytes%64 != 0 || o.shardBytes > MaxShardBytes {
		return o, fmt.Errorf("%w: shard size %d bytes (want a multiple of 64 up to %d)", ErrInvalid, o.shardBytes, MaxShardBytes)
	}
	if err := checkLayout(o.layout); err != nil {
		return o, err
	}
	return o, nil
}

// checkLayout refuses the layouts a filter in Redis bitmaps cannot have:
// bloom.RedisBloom is RedisBloom's own format (its hash and sub-filter
// geometry), which lives in a RedisBloom server, not in bitmaps.
func checkLayout(l bloom.Layout) error {
	if l != bloom.Blocked && l != bloom.Classic {
		return fmt.Errorf("%w: layout %s (want blocked or classic; RedisBloom-layout filters live in a RedisBloom server, behind BF.*)",
			ErrInvalid, l)
	}
	return nil
}

// WithLayout selects the layout of a new filter (default bloom.Blocked;
// bloom.Classic is the other one; bloom.RedisBloom is refused with
// ErrInvalid). Open ignores it: the metadata says.
func WithLayout(l bloom.Layout) Option { return func(o *options) { o.layout = l } }

// WithKey hashes items with keyed SipHash (bloom.WithKey), against hash
// flooding. Only a check value of the key is stored in Redis; Open needs
// the same key.
func WithKey(key [16]byte) Option { return func(o *options) { k := key; o.key = &k } }

// WithShardBytes sets the shard size of a new filter, a multiple of 64
// bytes up to MaxShardBytes (default DefaultShardBytes).
func WithShardBytes(n uint64) Option { return func(o *options) { o.shardBytes = n } }

// WithMaxBytes bounds the size of a filter Create makes (default
// DefaultMaxBytes).
func WithMaxBytes(n uint64) Option { return func(o *options) { o.maxBytes = n } }

// WithRefresh sets how often the Filter re-reads its metadata to follow
// rotations by other clients (default DefaultRefresh; 0 never).
func WithRefresh(d time.Duration) Option { return func(o *options) { o.refresh = d } }

// WithGrowth sets the growth rule of a filter CreateScalable makes, as
// bloom.WithGrowth does for bloom.NewScalable (default: bloom's defaults;
// bloom.Growth{RedisBloom: true} for RedisBloom's error split). Other
// functions ignore it: an open filter's metadata says. A blocked filter's
// small sub-filters are classic as in bloom.Scalable, and its metadata is
// then of version 2, which clients before that rule refuse;
// bloom.Growth{UniformLayout: true} keeps every sub-filter blocked and
// the metadata at version 1.
func WithGrowth(g bloom.Growth) Option { return func(o *options) { o.growth = g } }

// WithBucketSize sets the slots per bucket of a new Cuckoo, 1 to
// cuckoo.MaxBucketSize (default cuckoo.DefaultBucketSize). Other
// functions ignore it.
func WithBucketSize(n uint64) Option {
	return func(o *options) { o.cuckoo = append(o.cuckoo, cuckoo.WithBucketSize(n)) }
}

// WithMaxIterations sets the kicks an insert into a new Cuckoo tries
// before it grows the filter, 1 to cuckoo.MaxIterationsLimit (default
// cuckoo.DefaultMaxIterations). Other functions ignore it.
func WithMaxIterations(n uint64) Option {
	return func(o *options) { o.cuckoo = append(o.cuckoo, cuckoo.WithMaxIterations(n)) }
}

// WithExpansion sets the growth factor of a new Cuckoo, 0 to
// cuckoo.MaxExpansion, rounded up to a power of two (default
// cuckoo.DefaultExpansion); 0 makes a filter that never grows. Other
// functions ignore it (a scalable Bloom filter's is WithGrowth's).
func WithExpansion(n uint64) Option {
	return func(o *options) { o.cuckoo = append(o.cuckoo, cuckoo.WithExpansion(n)) }
}
