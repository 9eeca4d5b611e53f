package guard

import (
	"context"
	"fmt"
	"iter"
	"math"
	"time"
)

// LoadFunc reads id from the source of truth: its value and whether it
// exists. An error is passed on to the callers and cached nowhere.
type LoadFunc[V any] func(ctx context.Context, id string) (v V, found bool, err error)

// Options configures a Guard. Zero fields take the defaults given with
// each; Load is required, and IDs is required unless the membership is
// shared and already filled by another process.
type Options[V any] struct {
	// Load reads an ID from the source of truth. Required.
	Load LoadFunc[V]

	// IDs iterates over every ID in the source of truth, for the first
	// fill and each rebuild. A rebuild calls it when it is ready to read,
	// and the iterator must see every write committed before that call
	// (a query run by the call or by the first step of the iteration
	// does). Yielding an error stops the rebuild, which then keeps the
	// old filter.
	IDs func(ctx context.Context) iter.Seq2[string, error]

	// Count is the number of IDs in the source, to size each new filter
	// (Count × Headroom). default: nil, and a rebuild reads IDs twice,
	// once to count them.
	Count func(ctx context.Context) (uint64, error)

	// Membership is the filter of existing IDs. default: NewMemory(), a
	// blocked Bloom filter in this process.
	Membership Membership

	// FalsePositiveRate is the rate each new filter is sized for at its
	// capacity. default: 0.01.
	FalsePositiveRate float64

	// Headroom is the capacity of a new filter as a multiple of the
	// source's count, room for the IDs added until the next rebuild.
	// default: 2.
	Headroom float64

	// Cache holds values that were loaded. default: a MemoryCache of
	// CacheSize entries that live CacheTTL.
	Cache Cache[V]
	// CacheSize bounds the default cache's entries. default: 100,000.
	CacheSize int
	// CacheTTL is how long the default cache keeps a value. default:
	// 1 minute.
	CacheTTL time.Duration

	// NegativeSize bounds the negative cache: IDs the filter let through
	// (false positives) that the source did not have. default: 100,000.
	NegativeSize int
	// NegativeTTL is how long the negative cache remembers such an ID.
	// default: 1 minute.
	NegativeTTL time.Duration

	// CommitWindow is the longest a write may take to commit after its
	// ID was added: Added's caller commits within it; Write gives its
	// function a context with that deadline when the membership is
	// shared; rebuilds wait for it where they cannot track writes
	// exactly; and a negative-cache entry is not made for an ID added
	// less than this long ago. default: 10 seconds.
	CommitWindow time.Duration

	// LoadTimeout bounds one load. The load runs once for all the callers
	// waiting on the ID, so it has its own context, detached from theirs;
	// each caller still stops waiting when its own context ends.
	// default: 10 seconds.
	LoadTimeout time.Duration

	// RebuildEvery rebuilds the filter on this schedule, in the
	// background, until Close. default: 0, rebuild only on demand.
	RebuildEvery time.Duration

	// OnError is told of errors nobody else sees: failed background
	// rebuilds, and membership or cache errors that a Get worked around.
	// default: nil, ignore them (they are counted in Stats).
	OnError func(error)
}

// Defaults.
const (
	DefaultFalsePositiveRate = 0.01
	DefaultHeadroom          = 2
	DefaultCacheSize         = 100_000
	DefaultCacheTTL          = time.Minute
	DefaultNegativeSize      = 100_000
	DefaultNegativeTTL       = time.Minute
	DefaultCommitWindow      = 10 * time.Second
	DefaultLoadTimeout       = 10 * time.Second
)

// withDefaults returns a copy of o with the defaults filled in, or an
// error naming the first field that makes no sense.
func (o *Options[V]) withDefaults() (Options[V], error) {
	c := *o
	if c.Load == nil {
		return c, fmt.Errorf("%w: Options.Load is required", ErrInvalid)
	}
	if c.Membership == nil {
		c.Membership = NewMemory()
	}
	if c.FalsePositiveRate == 0 {
		c.FalsePositiveRate = DefaultFalsePositiveRate
	}
	if !(c.FalsePositiveRate > 0 && c.FalsePositiveRate < 1) {
		return c, fmt.Errorf("%w: FalsePositiveRate %v is not in (0, 1)", ErrInvalid, c.FalsePositiveRate)
	}
	if c.Headroom == 0 {
		c.Headroom = DefaultHeadroom
	}
	if !(c.Headroom >= 1) || math.IsInf(c.Headroom, 0) {
		return c, fmt.Errorf("%w: Headroom %v is below 1", ErrInvalid, c.Headroom)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"CacheTTL", &c.CacheTTL, DefaultCacheTTL},
		{"NegativeTTL", &c.NegativeTTL, DefaultNegativeTTL},
		{"CommitWindow", &c.CommitWindow, DefaultCommitWindow},
		{"LoadTimeout", &c.LoadTimeout, DefaultLoadTimeout},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return c, fmt.Errorf("%w: %s %v is negative", ErrInvalid, d.name, *d.v)
		}
	}
	if c.RebuildEvery < 0 {
		return c, fmt.Errorf("%w: RebuildEvery %v is negative", ErrInvalid, c.RebuildEvery)
	}
	if c.RebuildEvery > 0 && c.IDs == nil {
		return c, fmt.Errorf("%w: RebuildEvery needs Options.IDs", ErrInvalid)
	}
	for _, s := range []struct {
		name string
		v    *int
		def  int
	}{{"CacheSize", &c.CacheSize, DefaultCacheSize}, {"NegativeSize", &c.NegativeSize, DefaultNegativeSize}} {
		if *s.v == 0 {
			*s.v = s.def
		}
		if *s.v < 0 {
			return c, fmt.Errorf("%w: %s %d is negative", ErrInvalid, s.name, *s.v)
		}
	}
	if sh, ok := c.Membership.(Shared); ok && c.NegativeTTL+c.CommitWindow > sh.Horizon() {
		return c, fmt.Errorf("%w: NegativeTTL + CommitWindow (%v) exceed the shared membership's horizon %v",
			ErrInvalid, c.NegativeTTL+c.CommitWindow, sh.Horizon())
	}
	if c.Cache == nil {
		c.Cache = NewMemoryCache[V](c.CacheSize, c.CacheTTL)
	}
	return c, nil
}

// plan is the plan of a rebuild for count IDs.
func (o *Options[V]) plan(count uint64) Plan {
	capacity := math.Ceil(float64(max(count, 1)) * o.Headroom)
	return Plan{
		Capacity:          uint64(min(capacity, 1<<62)),
		FalsePositiveRate: o.FalsePositiveRate,
		CommitWindow:      o.CommitWindow,
	}
}
