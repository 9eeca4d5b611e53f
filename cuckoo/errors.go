package cuckoo

import "errors"

// Sentinel errors. Functions wrap them with context; test with errors.Is.
var (
	// ErrInvalid reports a parameter out of range: a bucket size, a
	// number of iterations, an expansion or a capacity.
	ErrInvalid = errors.New("cuckoo: invalid parameter")
	// ErrFull reports an item that found no room in a filter that does
	// not grow (expansion 0): RedisBloom's "Filter is full".
	ErrFull = errors.New("cuckoo: filter is full")
	// ErrTooLarge reports a filter, or a growth, beyond the limits: more
	// bytes than WithMaxBytes allows, more than MaxBuckets buckets in a
	// sub-filter or more than MaxFilters sub-filters. Nothing was
	// allocated. A growth that fails this way is RedisBloom's
	// "Insufficient memory".
	ErrTooLarge = errors.New("cuckoo: filter larger than the limit")
	// ErrFormat reports a malformed dump header or encoding.
	ErrFormat = errors.New("cuckoo: malformed filter encoding")
	// ErrChecksum reports an encoding whose checksum does not match.
	ErrChecksum = errors.New("cuckoo: checksum mismatch")
	// ErrChunk reports a dump chunk that does not fit in the filter at
	// its iterator: RedisBloom's "Couldn't load chunk!".
	ErrChunk = errors.New("cuckoo: chunk does not fit the filter")
)
