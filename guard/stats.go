package guard

import (
	"math/rand/v2"
	"sync/atomic"
)

// Stats counts what a Guard did since New. Every Get is one Request and
// ends in exactly one of Absent, CacheHits, NegativeHits, Loaded (it
// started a load and got its answer), Joined (it waited for a load
// another Get started) or Canceled (its context ended while it waited
// for a load, which goes on for the others).
type Stats struct {
	Requests       uint64 // Get calls
	Absent         uint64 // answered ErrNotFound by the filter alone
	CacheHits      uint64 // answered from the cache (a MemoryCache counts them itself: for all the Guards that share it)
	NegativeHits   uint64 // answered ErrNotFound by the negative cache
	Loaded         uint64 // Gets answered by a load they started
	Joined         uint64 // Gets that waited for another Get's load (singleflight)
	Canceled       uint64 // Gets whose context ended while they waited for a load
	Loads          uint64 // loader calls
	FalsePositives uint64 // loads that found nothing: the filter let the ID through
	LoadErrors     uint64 // loads that failed
	FilterErrors   uint64 // membership errors, where Get asked the source instead
	CacheErrors    uint64 // cache errors, treated as misses
	Added          uint64 // Added and Write calls that added to the filter
	Removed        uint64 // Removed calls that deleted from the filter
	Rebuilds       uint64 // completed rebuilds (the first fill included)
	RebuildErrors  uint64 // failed rebuilds
}

// counters are the live Stats, spread over shards on separate cache lines
// so that Gets on different cores do not contend for one counter; each
// Get counts in a shard picked at random (math/rand/v2's per-thread
// generator: a few nanoseconds, no lock).
type counters struct {
	shards [counterShards]counterShard
}

const counterShards = 8

type counterShard struct {
	absent, cacheHits, negativeHits, loaded, loads, joined, canceled, falsePositives atomic.Uint64
	loadErrors, filterErrors, cacheErrors, added, removed, rebuilds, rebuildErrors   atomic.Uint64
	_                                                                                [8]byte
}

func (c *counters) shard() *counterShard { return &c.shards[rand.Uint32()%counterShards] }

func (c *counters) snapshot() Stats {
	var s Stats
	for i := range c.shards {
		x := &c.shards[i]
		s.Loaded += x.loaded.Load()
		s.Absent += x.absent.Load()
		s.CacheHits += x.cacheHits.Load()
		s.NegativeHits += x.negativeHits.Load()
		s.Loads += x.loads.Load()
		s.Joined += x.joined.Load()
		s.Canceled += x.canceled.Load()
		s.FalsePositives += x.falsePositives.Load()
		s.LoadErrors += x.loadErrors.Load()
		s.FilterErrors += x.filterErrors.Load()
		s.CacheErrors += x.cacheErrors.Load()
		s.Added += x.added.Load()
		s.Removed += x.removed.Load()
		s.Rebuilds += x.rebuilds.Load()
		s.RebuildErrors += x.rebuildErrors.Load()
	}
	s.Requests = s.Absent + s.CacheHits + s.NegativeHits + s.Loaded + s.Joined + s.Canceled
	return s
}
