package guard

import "sync/atomic"

// Stats counts what a Guard did since New. Every Get is one Request and
// ends in exactly one of Absent, CacheHits, NegativeHits, a load (Loads,
// including the Get that started it, or Joined for the others waiting on
// it), or a canceled wait.
type Stats struct {
	Requests       uint64 // Get calls
	Absent         uint64 // answered ErrNotFound by the filter alone
	CacheHits      uint64 // answered from the cache
	NegativeHits   uint64 // answered ErrNotFound by the negative cache
	Loads          uint64 // loader calls
	Joined         uint64 // Gets that waited for another Get's load (singleflight)
	FalsePositives uint64 // loads that found nothing: the filter let the ID through
	LoadErrors     uint64 // loads that failed
	FilterErrors   uint64 // membership errors, where Get asked the source instead
	CacheErrors    uint64 // cache errors, treated as misses
	Added          uint64 // Added and Write calls that added to the filter
	Removed        uint64 // Removed calls that deleted from the filter
	Rebuilds       uint64 // completed rebuilds (the first fill included)
	RebuildErrors  uint64 // failed rebuilds
}

// counters are the live Stats.
type counters struct {
	requests, absent, cacheHits, negativeHits, loads, joined, falsePositives       atomic.Uint64
	loadErrors, filterErrors, cacheErrors, added, removed, rebuilds, rebuildErrors atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Requests: c.requests.Load(), Absent: c.absent.Load(), CacheHits: c.cacheHits.Load(),
		NegativeHits: c.negativeHits.Load(), Loads: c.loads.Load(), Joined: c.joined.Load(),
		FalsePositives: c.falsePositives.Load(), LoadErrors: c.loadErrors.Load(),
		FilterErrors: c.filterErrors.Load(), CacheErrors: c.cacheErrors.Load(),
		Added: c.added.Load(), Removed: c.removed.Load(),
		Rebuilds: c.rebuilds.Load(), RebuildErrors: c.rebuildErrors.Load(),
	}
}
