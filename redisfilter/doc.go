// Package redisfilter keeps Bloom filters in Redis bitmaps, and cuckoo
// filters in Redis strings, using only core Redis commands (Redis 6.2 or
// later, no modules), so they work on any managed Redis, with Sentinel and
// on Redis Cluster. Filter and GoZeroFilter use no scripts at all;
// Scalable writes through Lua scripts (EVALSHA, EVAL on NOSCRIPT), or a
// batch through a transaction that a small script opens (MULTI, EXEC,
// WATCH), so that its counters stay exact under concurrent clients, and
// reads with core commands only; with WithMirrors it keeps a copy of its
// bits, trusted only through a token every write replaces, and writes a
// batch without reading (scalable_mirror.go). Cuckoo does every
// operation in one Lua script call.
//
// A filter has the layout, hash and bytes of the in-memory bloom.Filter of
// the same geometry: Upload and Download copy one into the other, so a
// filter built offline can be served from Redis and a Redis filter saved
// to a file.
//
// Guarantees:
//   - Each item's bits change in one atomic command (BITFIELD, or the
//     SETRANGE of its block in a transaction), and all of an item's bits
//     live in one key, so Add and Exists never see half an item, also
//     while other clients write. Exists on a blocked filter
//     reads the item's 64-byte block with one GETRANGE and tests the bits
//     in the client; the other layouts read with BITFIELD_RO.
//   - A single-item call is one round trip; a batch is one pipelined round
//     trip per node involved (per MaxBatch items), in BITFIELD commands of
//     at most MaxOpsPerCommand bit operations each, or for blocked reads
//     one GETRANGE per run of nearby blocks (an ExistsMany of 1000 items
//     costs Redis about 0.5 µs of CPU per item, an AddMany about 2.3 µs;
//     docs/BENCHMARKS.md).
//   - The parameters (layout, hash identity, m, k, n, p, shards, format
//     version) live in a metadata key written atomically with SET NX; Open
//     of a missing or malformed filter, or with the wrong key, fails with a
//     sentinel error, never silently.
//   - A filter larger than the shard size (WithShardBytes, default 256 MiB,
//     at most 512 MiB, the Redis string limit) spans several shard keys,
//     each with its own hash tag, so a Redis Cluster spreads them over
//     slots. Only the blocked layout can be sharded (an item's bits lie in
//     one 64-byte block); a classic filter must fit one key.
//   - Redis errors come back wrapped with the filter's name; contexts are
//     honoured; nothing panics. After Redis restarts, the next calls
//     succeed again on the same client.
//   - An add's "new" answer is exact only if its command runs once. A
//     client that re-sends a write whose reply it lost (go-redis does on
//     a read timeout, up to Options.MaxRetries) gets the second run's
//     answer, "not new", for items the first run added. The bits are set
//     either way: retries never cause a false negative. Where "new" must
//     be exact (counting, deduplication), give the client MaxRetries: -1
//     and a read timeout that fits the largest batch.
//
// Keys: the metadata key is the filter's name; shard i of generation g is
// "{<tag>.<g>.<i>}<name>", where tag is a hash of the name.
//
// # Cuckoo filters
//
// Cuckoo (CreateCuckoo, OpenCuckoo, CuckooAt) is a cuckoo filter with the
// semantics and bytes of package cuckoo's Filter, RedisBloom's CF.*
// (docs/CUCKOO.md): the same operations in the same order leave both with
// the same bytes, ScanDump gives CF.SCANDUMP's chunks, and Download and
// UploadCuckoo copy one into the other. It can delete items. Each call is
// one atomic script call per 2048 items (one round trip): Add, AddUnique,
// AddMany, Insert, Test, TestMany, Count, CountMany, Delete, DeleteMany,
// Compact, ScanDump, LoadChunk, Drop, ExpireAt and Persist; Info is one
// HGETALL. Items are hashed in the client and sent as 8 bytes each. All
// keys of a filter lie in its name's slot; a filter is at most
// WithMaxBytes, refused before anything is written.
//
// # Migrating from go-zero
//
// A filter made with go-zero's core/bloom, bloom.New(store, key, bits),
// opens with OpenGoZero(client, key, bits): same key, same bits, same
// answers, so go-zero and Bloomery clients can share it while a service
// moves over, with no rebuild. GoZeroFilter adds batches (AddMany,
// ExistsMany), an Add that reports whether the item was new, Expire and
// Delete, and leaves the caller's slices alone; BenchmarkGoZero in the
// interop module measures it at about twice go-zero's rate per single
// call and three to five times in batches of 1000. It keeps go-zero's
// format and so its limits: k is fixed at 14 and the bit count is chosen
// by hand and not stored. To size a filter for a capacity and error rate,
// Create a new Filter and add the items again: the hashes differ, so
// there is no bit-level conversion.
package redisfilter
