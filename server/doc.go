// Package server is bloomery serve: a Redis-protocol server whose keys are
// RedisBloom-compatible scalable Bloom filters (BF.* commands), so any
// Redis client can use them without Redis modules.
//
// Design (issue 5; built in steps):
//
//   - Wire: internal/resp parses RESP2 arrays and inline commands with
//     explicit limits (bulk length, argument count, query buffer) and
//     writes RESP2 or RESP3 (HELLO). A protocol error answers -ERR and
//     closes that connection, as Redis does. Replies are flushed only when
//     no pipelined command is waiting.
//   - Commands: a table of name → arity, flags (write, admin, no-auth) and
//     handler, one file per family (bloom, keys, server, connection);
//     unknown commands and wrong arity answer with Redis's exact errors.
//   - Keyspace: filters are bloom.Scalable in RedisBloom mode (first
//     sub-filter at p/2, error × 0.5, capacity × expansion), so BF.INFO's
//     Capacity, Number of filters, Number of items inserted and Expansion
//     rate match RedisBloom for the same commands. Keys are sharded over
//     locks so clients on different keys run in parallel on all cores;
//     expiry is enforced lazily on access and by a periodic sweep.
//   - Durability (memory backend): every mutating command is appended to
//     a RESP-encoded log before its reply is written; fsync per policy
//     (always: before the reply; everysec; no). A snapshot (the file
//     format of package bloom, kind 2, per key, plus TTLs) is written in
//     the background and replaces the log atomically (write, fsync,
//     rename, fsync the directory). Startup loads the snapshot, then
//     replays the log; a torn last record is cut with a warning, other
//     corruption stops startup with a message naming the file, offset
//     and the repair.
//   - Redis backend: the same commands on redisfilter.Scalable, so a
//     stateless server gives BF.* on a Redis or Redis Cluster without
//     modules.
//   - Limits (docs/SERVER.md): memory limits are on by default (half the
//     machine's or the control group's memory for all filters' reserved
//     bytes, 128 MiB per filter); --timeout counts idleness and a client
//     that does not read its replies is closed after WriteTimeout; a
//     Config value that makes no sense fails New with an error naming
//     the field.
package server
