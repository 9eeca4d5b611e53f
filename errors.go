package bloom

import "errors"

// Sentinel errors. Functions wrap them with context; test with errors.Is.
var (
	// ErrInvalidCapacity reports an expected item count of zero.
	ErrInvalidCapacity = errors.New("bloom: expected items must be at least 1")
	// ErrInvalidRate reports a false-positive rate outside (0, 1) or NaN.
	ErrInvalidRate = errors.New("bloom: false-positive rate must be in (0, 1)")
	// ErrTooLarge reports a filter larger than the configured maximum size.
	ErrTooLarge = errors.New("bloom: filter larger than the maximum size")
	// ErrInvalidSize reports a bit count that is zero or not a multiple of
	// the layout's word (64 bits) or block (512 bits).
	ErrInvalidSize = errors.New("bloom: invalid filter size")
	// ErrInvalidLayout reports an unknown layout value.
	ErrInvalidLayout = errors.New("bloom: unknown layout")
	// ErrInvalidK reports a hash count outside [1, MaxK].
	ErrInvalidK = errors.New("bloom: hash count out of range")
	// ErrIncompatible reports an operation on two filters that differ in
	// layout, size, hash count or hash function.
	ErrIncompatible = errors.New("bloom: filters are incompatible")
	// ErrFormat reports a malformed, truncated or unsupported encoding.
	ErrFormat = errors.New("bloom: malformed filter encoding")
	// ErrChecksum reports an encoding whose checksum does not match its content.
	ErrChecksum = errors.New("bloom: checksum mismatch")
	// ErrKeyRequired reports a keyed filter encoding read without its key.
	ErrKeyRequired = errors.New("bloom: filter is keyed; supply its key with WithKey")
	// ErrWrongKey reports a keyed filter encoding read with a different key.
	ErrWrongKey = errors.New("bloom: key does not match the filter's key")
)
