package redisfilter

import "errors"

// Sentinel errors; errors from this package wrap them with context.
var (
	// ErrExists: Create of a name that already holds a filter (or any key).
	ErrExists = errors.New("redisfilter: filter already exists")
	// ErrNotFound: Open of a name with no filter.
	ErrNotFound = errors.New("redisfilter: filter not found")
	// ErrMetadata: the metadata key holds something that is not a filter
	// this version can read.
	ErrMetadata = errors.New("redisfilter: malformed filter metadata")
	// ErrIncompatible: Upload of a filter of another geometry or hash.
	ErrIncompatible = errors.New("redisfilter: incompatible filter")
	// ErrKeyRequired / ErrWrongKey: opening a keyed filter without its
	// key, or with another key (or a key for an unkeyed filter).
	ErrKeyRequired = errors.New("redisfilter: the filter is keyed; open it WithKey")
	ErrWrongKey    = errors.New("redisfilter: wrong key for the filter")
	// ErrTooLarge: a filter beyond WithMaxBytes, or a classic filter
	// larger than one shard.
	ErrTooLarge = errors.New("redisfilter: filter too large")
	// ErrInvalid: an invalid option value.
	ErrInvalid = errors.New("redisfilter: invalid argument")
)
