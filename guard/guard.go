package guard

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Guard answers Get for IDs of a data set, asking a filter of the IDs
// that exist (its Membership) before a cache and the source of truth, so
// that requests for IDs that do not exist cost no load (see the package
// documentation). It is safe for concurrent use.
type Guard[V any] struct {
	opt    Options[V]
	m      Membership
	shared Shared // m, if shared
	cache  Cache[V]
	local  *MemoryCache[V] // cache, if it is one
	neg    *MemoryCache[negEntry]
	flight flight[V]
	c      counters

	seed    maphash.Seed
	buckets []bucket

	rebuildMu sync.Mutex // one Rebuild at a time
	stop      context.CancelFunc
	done      chan struct{} // closed when the rebuild loop has ended
	closed    atomic.Bool
}

// negEntry is a negative-cache entry: the ID's bucket version when its
// load began, and the earliest time an add that load could have missed
// was made.
type negEntry struct {
	version uint64
	since   time.Time
}

// bucket orders writes against loads for the IDs that hash to it: every
// Added, Write and Removed bumps version, and a load stores its outcome
// (a value in the cache, an entry in the negative cache) only if the
// version did not change while it ran. lastBare is when an Added (whose
// write commits later, unseen) last returned.
type bucket struct {
	version  atomic.Uint64
	lastBare atomic.Int64 // monoNow()
	_        [48]byte
}

const versionBuckets = 4096

// never is a lastBare long ago.
const never = -1 << 62

// New returns a Guard configured by o. If the membership is not ready
// (an in-process filter always starts empty), New fills it from
// o.IDs first, so that no existing ID is ever reported absent, or waits
// while another process fills a shared one; ctx bounds that. With o.RebuildEvery it starts the background rebuilds; Close
// stops them.
func New[V any](ctx context.Context, o *Options[V]) (*Guard[V], error) {
	if o == nil {
		return nil, fmt.Errorf("%w: nil Options", ErrInvalid)
	}
	opt, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	g := &Guard[V]{
		opt: opt, m: opt.Membership, cache: opt.Cache,
		neg:     NewMemoryCache[negEntry](opt.NegativeSize, opt.NegativeTTL),
		seed:    maphash.MakeSeed(),
		buckets: make([]bucket, versionBuckets),
		done:    make(chan struct{}),
	}
	for i := range g.buckets {
		g.buckets[i].lastBare.Store(never)
	}
	g.shared, _ = g.m.(Shared)
	g.local, _ = g.cache.(*MemoryCache[V])
	ready, err := g.m.Ready(ctx)
	if err != nil {
		return nil, fmt.Errorf("guard: new: %w", err)
	}
	if !ready {
		if opt.IDs == nil {
			return nil, fmt.Errorf("%w: the membership is empty and Options.IDs is nil", ErrInvalid)
		}
		if err := g.firstFill(ctx); err != nil {
			return nil, err
		}
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	g.stop = stop
	if opt.RebuildEvery > 0 {
		go g.rebuildLoop(bg)
	} else {
		close(g.done)
	}
	return g, nil
}

// firstFill fills an empty membership, or, if another process is filling
// a shared one, waits until it is ready.
func (g *Guard[V]) firstFill(ctx context.Context) error {
	g.rebuildMu.Lock()
	err := g.rebuild(ctx)
	g.rebuildMu.Unlock()
	if err == nil {
		g.c.shard().rebuilds.Add(1)
		return nil
	}
	if !errors.Is(err, ErrRebuildRunning) {
		return fmt.Errorf("guard: first fill: %w", err)
	}
	for {
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("guard: waiting for another process's first fill: %w", err)
		}
		ready, err := g.m.Ready(ctx)
		if err != nil {
			return fmt.Errorf("guard: waiting for another process's first fill: %w", err)
		}
		if ready {
			return nil
		}
	}
}

// Close stops the background rebuilds and waits for one under way to end
// (its context is canceled). Get, Added, Write and Removed keep working;
// Rebuild answers ErrClosed.
func (g *Guard[V]) Close() error {
	if g.closed.Swap(true) {
		return nil
	}
	g.stop()
	<-g.done
	return nil
}

// Stats returns the counters.
func (g *Guard[V]) Stats() Stats {
	s := g.c.snapshot()
	if g.local != nil {
		hits := g.local.hits()
		s.CacheHits += hits
		s.Requests += hits
	}
	return s
}

// Get returns id's value. ErrNotFound (errors.Is) means id does not exist:
// the filter says it is absent, or the negative cache remembers that the
// source did not have it a moment ago, or the loader did not find it.
// Otherwise the value comes from the cache, or from one load shared by
// every Get of id meanwhile. Errors of the membership and the cache are
// worked around (the source is asked; see Options.OnError); errors of the
// loader and of ctx are returned.
//
// An in-process MemoryCache is asked before the filter, so that a hit
// costs what the cache costs; any other Cache after it, so that an absent
// ID costs no round trip to a remote cache.
func (g *Guard[V]) Get(ctx context.Context, id string) (V, error) {
	var zero V
	if g.local != nil {
		if v, hit := g.local.getCounted(id); hit {
			return v, nil
		}
	}
	c := g.c.shard()
	present, err := g.m.Test(ctx, id)
	if err != nil {
		c.filterErrors.Add(1)
		g.report(fmt.Errorf("guard: test %q: %w", id, err))
		present = true
	}
	if !present {
		c.absent.Add(1)
		return zero, ErrNotFound
	}
	if g.local == nil {
		v, hit, err := g.cache.Get(ctx, id)
		if err != nil {
			c.cacheErrors.Add(1)
			g.report(fmt.Errorf("guard: cache get %q: %w", id, err))
		} else if hit {
			c.cacheHits.Add(1)
			return v, nil
		}
	}
	b := g.bucket(id)
	if g.negativeHit(ctx, id, b) {
		c.negativeHits.Add(1)
		return zero, ErrNotFound
	}
	v, joined, err := g.flight.do(ctx, id, func() (V, error) { return g.load(ctx, id, b) })
	switch {
	case ctx.Err() != nil && errors.Is(err, context.Cause(ctx)):
		c.canceled.Add(1)
	case joined:
		c.joined.Add(1)
	default:
		c.loaded.Add(1)
	}
	return v, err
}

// negativeHit reports whether the negative cache holds id, made since
// the last write of its bucket and, for a shared membership, since the
// last add of id anywhere.
func (g *Guard[V]) negativeHit(ctx context.Context, id string, b *bucket) bool {
	e, hit := g.neg.get(id)
	return hit && e.version == b.version.Load() && !g.addedSince(ctx, id, e.since)
}

// addedSince asks a shared membership whether another process added id
// since a negative-cache entry's load; an error counts as yes.
func (g *Guard[V]) addedSince(ctx context.Context, id string, since time.Time) bool {
	if g.shared == nil {
		return false
	}
	added, err := g.shared.AddedSince(ctx, id, since)
	if err != nil {
		g.c.shard().filterErrors.Add(1)
		g.report(fmt.Errorf("guard: recent adds of %q: %w", id, err))
		return true
	}
	if added {
		g.neg.del(id)
	}
	return added
}

// load runs the loader once for id, with a context of its own (the
// values of the caller's that started it, LoadTimeout), and records the
// outcome if no write of id's bucket happened meanwhile.
func (g *Guard[V]) load(caller context.Context, id string, b *bucket) (V, error) {
	var zero V
	version := b.version.Load()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(caller), g.opt.LoadTimeout)
	defer cancel()
	// A load of id may have ended between this Get's look at the caches
	// and its start of this one: look again, so that concurrent Gets
	// cost one load, not one per straggler.
	if v, hit, err := g.cache.Get(ctx, id); err == nil && hit {
		return v, nil
	}
	if g.negativeHit(caller, id, b) {
		return zero, ErrNotFound
	}
	c := g.c.shard()
	c.loads.Add(1)
	v, found, err := g.opt.Load(ctx, id)
	if err != nil {
		c.loadErrors.Add(1)
		return zero, fmt.Errorf("guard: load %q: %w", id, err)
	}
	unchanged := b.version.Load() == version
	if !found {
		c.falsePositives.Add(1)
		if unchanged && monoNow()-b.lastBare.Load() >= int64(g.opt.CommitWindow) {
			g.neg.set(id, negEntry{version: version, since: start.Add(-g.opt.CommitWindow)})
		}
		return zero, ErrNotFound
	}
	if unchanged {
		if err := g.cache.Set(ctx, id, v); err != nil {
			c.cacheErrors.Add(1)
			g.report(fmt.Errorf("guard: cache set %q: %w", id, err))
		}
	}
	return v, nil
}

func (g *Guard[V]) bucket(id string) *bucket {
	return &g.buckets[maphash.String(g.seed, id)%versionBuckets]
}

func (g *Guard[V]) report(err error) {
	if g.opt.OnError != nil {
		g.opt.OnError(err)
	}
}

// isCanceled reports whether err is ctx's own ending.
func isCanceled(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}
