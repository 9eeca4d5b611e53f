// Package cuckoo is a cuckoo filter with RedisBloom's exact semantics and
// bytes: a CF.SCANDUMP taken from RedisBloom loads into a Filter, and a
// Filter's dump loads into RedisBloom with CF.LOADCHUNK, and either side
// then answers every Test and Count as the other does (docs/CUCKOO.md).
//
// A cuckoo filter can delete: each item is an 8-bit fingerprint stored in
// one of two buckets, and Delete removes one copy. It answers "possibly
// present" or "definitely absent" like a Bloom filter, with no false
// negatives for items added and not deleted. The false-positive rate of
// one sub-filter is at most 2·b/255 for bucket size b (about 1.6% with
// the default b = 2, at full load; lower while the filter is emptier),
// and each sub-filter added by growth adds its own share.
//
// # What it does, as RedisBloom does
//
//   - Items are hashed with MurmurHash64A, seed 0 (Hash). The fingerprint
//     is h mod 255 + 1; the two buckets are h and h XOR fp·0x5bd1e995,
//     each reduced modulo the sub-filter's bucket count.
//   - A filter starts with one sub-filter of the next power of two ≥
//     capacity/bucketSize buckets. When an item finds no free slot in
//     any sub-filter, and MaxIterations kicks in the newest one fail
//     (they are then undone), a new sub-filter of Expansion times the
//     previous one's buckets is added and the item goes there; with
//     expansion 0 the Add fails with ErrFull.
//   - Add stores duplicates; AddUnique stores nothing when the item tests
//     present (false positives included). Delete removes one stored copy
//     and, when there is more than one sub-filter and the deletes since
//     the last compaction exceed 10% of the items, moves fingerprints
//     into older sub-filters and frees the newest ones it empties.
//
// # Concurrency
//
// A Filter is not safe for concurrent use. Test, TestMany, Count, Info,
// DumpHeader, DumpChunk and WriteTo only read it, so they may run
// together from many goroutines; every other method changes it and must
// not run concurrently with any call. Callers that share a filter guard
// it with a sync.RWMutex (read lock for the reading methods). View, taken
// like a change, is the filter at that instant, copy-on-write: another
// goroutine may write it out (View.WriteTo) while the owner goes on
// changing the filter, which then copies only the pages it changes
// before they are written out.
//
// # Limits
//
// Every allocation is checked first: a sub-filter holds at most 2⁵⁶ − 1
// buckets, a filter at most 65,535 sub-filters, and all sub-filters
// together at most WithMaxBytes bytes (default DefaultMaxBytes); a New,
// a growth or a load beyond these returns ErrTooLarge and allocates
// nothing. The hot paths (Add, AddUnique, Test, Count, Delete and their
// batched forms) allocate nothing but the sub-filter a growth adds.
package cuckoo
