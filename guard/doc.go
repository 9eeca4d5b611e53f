// Package guard protects a data set from requests for IDs that do not
// exist ("cache penetration"): such requests miss every cache and would
// each cost a query of the source of truth, and whoever sends them can
// send as many as they like. A Guard keeps a filter of every existing ID
// between the client and the data, and answers Get like this:
//
//  1. The filter (a Membership) says the ID is absent: ErrNotFound at
//     once, no query. A Bloom filter never says that of an ID it holds.
//  2. The cache (Options.Cache) has the value: return it.
//  3. The negative cache remembers that the source did not have the ID a
//     moment ago (a false positive of the filter): ErrNotFound.
//  4. Otherwise load it (Options.Load), once for all the Gets of the ID
//     waiting meanwhile (singleflight), and cache the outcome.
//
// # Guarantees
//
//   - No existing ID is ever answered ErrNotFound (docs/DESIGN.md §11
//     says how), provided writes are reported: Write (or Added, before the write commits and within
//     Options.CommitWindow) for a new ID, Removed after a deletion. This
//     holds under concurrent Gets, writes and rebuilds; the tests check it
//     with writers adding rows while readers hammer them.
//   - Requests for absent IDs cost the source about p·n queries for n
//     requests at the filter's false-positive rate p, and a repeated false
//     positive costs one load per NegativeTTL.
//   - Concurrent Gets of an ID that is not cached cost one load.
//   - Rebuild replaces the filter atomically, so that deleted IDs stop
//     being false positives, with no moment in which an existing ID reads
//     absent: in this process a new filter is filled while adds go to both
//     (Memory); on Redis through redisfilter's rotation (RedisFilter), or a
//     new key renamed over the old one (BF, CF).
//
// # Memberships
//
// NewMemory, NewMemoryScalable and NewMemoryCounting keep the filter in
// this process; NewRedisFilter keeps it in Redis bitmaps (package
// redisfilter) shared by every instance of a service, on any Redis 6.2 or
// Redis Cluster; NewBF and NewCF use a server speaking RedisBloom's BF.*
// or CF.* commands (bloomery serve, Redis with RedisBloom, Redis 8)
// through a go-redis client. Counting and cuckoo filters can delete (they
// implement Deleter); the others shed deleted IDs at the next Rebuild.
//
// # Concurrency and limits
//
// A Guard is safe for concurrent use. Its caches are bounded
// (Options.CacheSize, NegativeSize) and their entries expire. A Guard
// fails open: when the membership or the cache cannot answer, Get asks the
// source, and Stats counts it. Cached values are the loader's own: a
// Guard does not copy them, so callers must not change them.
//
// Metrics: Stats; package guardprom exports them to Prometheus, so that
// this package does not depend on it.
package guard
