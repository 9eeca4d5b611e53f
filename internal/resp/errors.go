package resp

import "errors"

// A ProtocolError is a request that Redis refuses as malformed. Its text is
// exactly the text of Redis 7.0 (networking.c, processInlineBuffer and
// processMultibulkBuffer), without the "ERR " that Redis puts in front of
// it on the wire: a server answers "-ERR " + err.Error() and then closes
// the connection, since the rest of the stream can no longer be framed.
type ProtocolError struct {
	msg string
}

func (e *ProtocolError) Error() string { return e.msg }

// The messages of the protocol errors, as Redis 7.0 writes them. A Reader
// returns one of these, or "Protocol error: expected '$', got 'c'" where c
// is the byte found instead of '$' (a '\r' or '\n' shows as a space, as
// Redis maps them, so the reply stays one line).
const (
	MsgInvalidMultibulkLength = "Protocol error: invalid multibulk length"
	MsgInvalidBulkLength      = "Protocol error: invalid bulk length"
	MsgTooBigInline           = "Protocol error: too big inline request"
	MsgUnbalancedQuotes       = "Protocol error: unbalanced quotes in request"
	MsgTooBigMbulkCount       = "Protocol error: too big mbulk count string"
	MsgTooBigBulkCount        = "Protocol error: too big bulk count string"
	MsgUnauthMultibulkLength  = "Protocol error: unauthenticated multibulk length"
	MsgUnauthBulkLength       = "Protocol error: unauthenticated bulk length"
)

var (
	errInvalidMultibulkLength = &ProtocolError{MsgInvalidMultibulkLength}
	errInvalidBulkLength      = &ProtocolError{MsgInvalidBulkLength}
	errTooBigInline           = &ProtocolError{MsgTooBigInline}
	errUnbalancedQuotes       = &ProtocolError{MsgUnbalancedQuotes}
	errTooBigMbulkCount       = &ProtocolError{MsgTooBigMbulkCount}
	errTooBigBulkCount        = &ProtocolError{MsgTooBigBulkCount}
	errUnauthMultibulkLength  = &ProtocolError{MsgUnauthMultibulkLength}
	errUnauthBulkLength       = &ProtocolError{MsgUnauthBulkLength}
)

// expectedDollar is Redis's error for a bulk string header that does not
// start with '$'. Redis formats the byte with %c and then replaces '\r' and
// '\n' by spaces so that the error stays on one line.
func expectedDollar(got byte) *ProtocolError {
	if got == '\r' || got == '\n' {
		got = ' '
	}
	return &ProtocolError{"Protocol error: expected '$', got '" + string([]byte{got}) + "'"}
}

// ErrQueryBufferLimit is returned when one command takes more than
// Limits.MaxQueryBuffer bytes. It is not a ProtocolError: Redis closes such
// a client without a reply (it only logs "Closing client that reached max
// query buffer length"), and a server should do the same.
var ErrQueryBufferLimit = errors.New("resp: command exceeds the query buffer limit")
