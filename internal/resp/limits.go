package resp

import "math"

// Defaults of Limits, after Redis 7.0's configuration defaults.
const (
	DefaultMaxBulk        = 512 << 20 // proto-max-bulk-len
	DefaultMaxArgs        = 1 << 20   // Redis 6.2's fixed limit; Redis 7.0 allows 2^31-1
	DefaultMaxInline      = 64 << 10  // PROTO_INLINE_MAX_SIZE
	DefaultMaxQueryBuffer = 1 << 30   // client-query-buffer-limit
)

// Limits bound what one command may declare and hold. A field that is zero
// or negative takes its default; MaxBulk and MaxQueryBuffer are capped at
// 2^60 bytes, so that sums of lengths cannot overflow.
type Limits struct {
	_ struct{} // forces named fields, so that fields can be added

	// MaxBulk is the longest bulk string accepted; a longer declared
	// length fails with MsgInvalidBulkLength before any of it is read.
	// Default: 512 MiB (DefaultMaxBulk), as Redis's proto-max-bulk-len.
	MaxBulk int64

	// MaxArgs is the largest array count accepted; a larger one fails with
	// MsgInvalidMultibulkLength. It bounds the slice of arguments (24 bytes
	// each) and is capped at 2^31-1, Redis 7.0's own limit. Inline
	// commands are bounded by MaxInline instead, as in Redis.
	// Default: 1<<20 (DefaultMaxArgs), the limit of Redis up to 6.2.
	MaxArgs int

	// MaxInline is the longest line accepted before its terminator: an
	// inline command (MsgTooBigInline), or the count line of an array
	// (MsgTooBigMbulkCount) or of a bulk string (MsgTooBigBulkCount).
	// Default: 64 KiB (DefaultMaxInline), Redis's PROTO_INLINE_MAX_SIZE.
	MaxInline int

	// MaxQueryBuffer is the most bytes one command may take on the wire,
	// headers included; a larger command fails with ErrQueryBufferLimit,
	// checked before a bulk string's bytes are read.
	// Default: 1 GiB (DefaultMaxQueryBuffer), Redis's
	// client-query-buffer-limit.
	MaxQueryBuffer int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxBulk <= 0 {
		l.MaxBulk = DefaultMaxBulk
	}
	if l.MaxArgs <= 0 {
		l.MaxArgs = DefaultMaxArgs
	}
	l.MaxArgs = min(l.MaxArgs, math.MaxInt32)
	if l.MaxInline <= 0 {
		l.MaxInline = DefaultMaxInline
	}
	if l.MaxQueryBuffer <= 0 {
		l.MaxQueryBuffer = DefaultMaxQueryBuffer
	}
	l.MaxBulk = min(l.MaxBulk, maxByteLimit, math.MaxInt/2)
	l.MaxQueryBuffer = min(l.MaxQueryBuffer, maxByteLimit)
	return l
}

const maxByteLimit = 1 << 60

// Redis's stricter limits for a client that has not authenticated yet
// (networking.c, since CVE-2021-32675).
const (
	unauthMaxArgs = 10
	unauthMaxBulk = 16384
)
