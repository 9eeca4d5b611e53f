// Package bloom provides Bloom filters sized from the number of expected
// items n and a target false-positive rate p, with a versioned file format
// whose bit payload is byte-identical to a Redis bitmap of the same filter.
//
// # Guarantees
//
//   - No false negatives: an added item always tests present, also under
//     concurrent use (WithConcurrent) and after a WriteTo/Load round trip.
//   - The rate asked for: New sizes the filter with the exact model of its
//     layout, plus a margin (0.8% more bits for Classic, 2% for Blocked),
//     so the measured rate after n distinct items stays at or below p for
//     p from 0.1 to 1e-7. Small filters (n below a few thousand) get more,
//     so that a single filter's rate, which varies from one set of items
//     to another, stays at or below p too, not only the average one. The tests check this at a 99% confidence bound
//     with random, sequential, shared-prefix and counter keys.
//   - 64-bit everywhere: 128-bit item hashes, 64-bit sizes, probes mapped
//     to a range by a 64x64->128 multiply (never a biased modulo), and
//     probe positions drawn from independent hash bits (never a double
//     hashing sequence that can collapse onto one bit), except in the
//     RedisBloom layout (below), which is RedisBloom's.
//   - Bad input gets an error, never a panic: invalid n or p, sizes above
//     the limit (DefaultMaxBytes, 16 GiB; see WithMaxBytes), malformed or
//     corrupted encodings.
//
// # Layouts
//
// Blocked (the default) keeps all k bits of an item in one 512-bit block,
// one 64-byte cache line, so Add and Test touch memory once. It needs more
// bits per key than Classic for the same rate: +5% at p = 0.01, +26% at
// p = 1e-5 as sized by New. Classic spreads the bits over the whole array
// and uses the least memory. Size reports the geometry of both without
// allocating.
//
// RedisBloom is RedisBloom's own layout, bit for bit, for compatibility
// only: its hash, sizing and growth, so that a Scalable filter moves to
// and from a real RedisBloom by BF.SCANDUMP and BF.LOADCHUNK chunks
// (DumpChunk, LoadDumpHeader, LoadChunk) and answers as it did there,
// false positives included. It keeps no false negatives but has
// RedisBloom's rate, not the guarantee above: small filters miss p
// (docs/DESIGN.md §10).
//
// # Scalable and counting filters
//
// Scalable grows a chain of sub-filters when items exceed its initial
// capacity, keeping the compound rate at or below p (RedisBloom's growth
// and counting rules; Growth.RedisBloom for its error split too).
// Counting has 4-bit saturating counters and supports Remove. Both encode
// to the same file format (kinds 2 and 3).
//
// # Hashing
//
// Items are hashed once, to 128 bits, with XXH3-128; a filter made
// WithKey uses SipHash-2-4-128 under a secret key instead, for input an
// adversary may choose. AddHash and TestHash take a ready Hash for callers
// who hash items themselves; Hash64 expands a 64-bit hash.
//
// # Concurrency
//
// By default Test, TestMany, TestHash and the read-only methods may be
// called from many goroutines, while Add, AddMany and AddHash need
// exclusive access. WithConcurrent makes Add and Test safe together, with
// atomic OR on 64-bit words and no locks. Clear, Union, Intersect,
// ReadFrom and UnmarshalBinary always need exclusive access.
//
// # Encoding
//
// WriteTo, ReadFrom, MarshalBinary, UnmarshalBinary and Load use the
// format in docs/FORMAT.md: a 64-byte header (magic, version, layout,
// hash, key check, m, k, n, p, count, CRC-32C), the bit array, and a
// CRC-32C trailer. Decoders check every field (that m and k can hold n
// items at rate p too: Sizing.CheckRate) and the sizes before allocating
// and leave the receiver untouched on error.
//
// A file of any kind opens with OpenAny (LoadAny from a stream), which
// reads it once, so it may be a pipe; File says which kind it held, and
// describing a filter needs no knowledge of the bytes (Scalable.Options
// and SubFilters, Counting.Stats). OpenFile memory-maps a Filter file in
// place; a mapped file truncated while in use makes reads fault, which
// MappedFilter.Guard turns into ErrFileChanged instead of a crash.
//
// # Speed
//
// A single Test on a filter larger than the CPU caches costs one cache
// miss plus the instructions around it. Where the CPU has AVX-512F, the
// blocked layout tests all k ≤ 14 probes of an item at once on vector
// registers, within 1.2× of one hash plus one load at 10^7 and 10^8 items
// (docs/BENCHMARKS.md, "A vector Test"); elsewhere, in race-detector
// builds, with the purego tag or with GODEBUG=cpu.avx512f=off, the same
// bits are tested one by one. Answers and files never depend on which.
// TestMany and AddMany overlap the misses of many items.
//
// # Creation cost
//
// Size solves the exact model in microseconds and memoises its result
// per (layout, n, p), so New and NewScalable with repeated parameters cost
// about 0.2 µs and two allocations (the filter and its bit array; a
// Scalable holds its first sub-filter), 1 to 10 µs with a new rate each
// time (docs/BENCHMARKS.md, "Filter creation").
package bloom
