package resp

import (
	"bufio"
	"bytes"
	"io"
	"math"
)

// Defaults of Limits, after Redis 7.0's configuration defaults.
const (
	DefaultMaxBulk        = 512 << 20 // proto-max-bulk-len
	DefaultMaxArgs        = 1 << 20   // Redis 6.2's fixed limit; Redis 7.0 allows 2^31-1
	DefaultMaxInline      = 64 << 10  // PROTO_INLINE_MAX_SIZE
	DefaultMaxQueryBuffer = 1 << 30   // client-query-buffer-limit
)

// Limits bound what one command may declare and hold. A field that is zero
// or negative takes its default.
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
	return l
}

// Redis's stricter limits for a client that has not authenticated yet
// (networking.c, since CVE-2021-32675).
const (
	unauthMaxArgs = 10
	unauthMaxBulk = 16384
)

const (
	growChunk   = 64 << 10 // most bytes reserved ahead of what has arrived
	growMin     = 256      // least growth of the argument buffer
	retainBytes = 64 << 10 // most buffer kept between commands when idle
)

// Reader reads commands from a client. It is not safe for concurrent use.
// Any error ends the stream: after one, the Reader must not be used again.
type Reader struct {
	br   *bufio.Reader
	lim  Limits
	buf  []byte // the arguments of the current command, back to back
	line []byte // a line longer than br's buffer, while it is assembled
	n    int64  // bytes of the current command consumed so far
	off  int64  // bytes of the stream consumed by complete commands

	authRequired bool
}

// NewReader returns a Reader of commands from br with the given limits.
// br's size does not limit what can be read: lines and bulk strings longer
// than its buffer are assembled in the Reader's own buffer.
func NewReader(br *bufio.Reader, lim Limits) *Reader {
	return &Reader{br: br, lim: lim.withDefaults()}
}

// Limits returns the limits in force, defaults filled in.
func (r *Reader) Limits() Limits { return r.lim }

// SetAuthRequired sets whether the client still has to authenticate. While
// it does, the Reader applies Redis's limits for such clients: an array of
// more than 10 elements fails with MsgUnauthMultibulkLength and a bulk
// string longer than 16384 bytes with MsgUnauthBulkLength. A server with a
// password sets it on connect and clears it after a successful AUTH or
// HELLO AUTH.
func (r *Reader) SetAuthRequired(required bool) { r.authRequired = required }

// Buffered returns the number of bytes received and not yet parsed. A
// server flushes its replies when it is zero, that is when no pipelined
// command is waiting, and otherwise goes on to the next command.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// Offset returns the number of bytes of the stream taken by the commands
// read so far, skipped empty ones included: where the next command starts.
// After an error it still gives the start of the command that failed,
// which is where a log with a torn last record is to be cut.
func (r *Reader) Offset() int64 { return r.off }

// ReadCommand reads the next command, skipping empty ones, and returns its
// arguments appended to dst[:0]; there is always at least one. The
// arguments point into the Reader's buffer and are valid until the next
// call. Passing the previous result as dst makes the steady state free of
// allocations.
//
// At the end of the stream between two commands it returns io.EOF, within
// a command io.ErrUnexpectedEOF. Malformed input yields a *ProtocolError, a
// command above MaxQueryBuffer ErrQueryBufferLimit; errors of the
// underlying reader are returned as they are.
func (r *Reader) ReadCommand(dst [][]byte) ([][]byte, error) {
	r.release()
	args := dst[:0]
	for {
		r.n = 0
		r.buf = r.buf[:0]
		first, err := r.br.Peek(1)
		if err != nil {
			return args, err
		}
		if first[0] == '*' {
			args, err = r.readArray(args)
		} else {
			args, err = r.readInline(args)
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return dst[:0], err
		}
		r.off += r.n
		if len(args) > 0 {
			return args, nil
		}
	}
}

// release drops a large argument buffer kept from the previous command
// when the connection is about to wait for its next command, or when that
// command used less than a quarter of it.
func (r *Reader) release() {
	if c := cap(r.buf); c > retainBytes && (r.br.Buffered() == 0 || len(r.buf) < c/4) {
		r.buf = nil
	}
	if cap(r.line) > retainBytes {
		r.line = nil
	}
}

// consume counts k more bytes of the current command.
func (r *Reader) consume(k int64) error {
	r.n += k
	if r.n > r.lim.MaxQueryBuffer {
		return ErrQueryBufferLimit
	}
	return nil
}

// readArray reads "*<count>\r\n" and count bulk strings.
func (r *Reader) readArray(args [][]byte) ([][]byte, error) {
	count, err := r.readCountLine(errTooBigMbulkCount, (*Reader).arrayCount)
	if err != nil {
		return args, err
	}
	for ; count > 0; count-- {
		if args, err = r.readBulk(args); err != nil {
			return args, err
		}
	}
	return args, nil
}

// arrayCount judges the count line "*<count>" of an array.
func (r *Reader) arrayCount(line []byte) (int64, error) {
	count, ok := parseInt(line[1:])
	switch {
	case !ok || count > int64(r.lim.MaxArgs):
		return 0, errInvalidMultibulkLength
	case count > unauthMaxArgs && r.authRequired:
		return 0, errUnauthMultibulkLength
	}
	return count, nil
}

// readCountLine reads the count line of an array or a bulk string up to
// its '\r', judges it, and skips the byte after the '\r' before returning
// the verdict: Redis judges the line only once that byte has arrived.
func (r *Reader) readCountLine(tooBig error, judge func(*Reader, []byte) (int64, error)) (int64, error) {
	line, err := r.readLine('\r', tooBig)
	if err != nil {
		return 0, err
	}
	n, lineErr := judge(r, line)
	if err := r.skip(1); err != nil {
		return 0, err
	}
	return n, lineErr
}

// readBulk reads "$<length>\r\n<bytes>\r\n" and appends the bytes to args.
func (r *Reader) readBulk(args [][]byte) ([][]byte, error) {
	size, err := r.readCountLine(errTooBigBulkCount, (*Reader).bulkSize)
	if err != nil {
		return args, err
	}
	if err := r.consume(size + 2); err != nil {
		return args, err
	}
	args, err = r.readBytes(args, int(size))
	if err != nil {
		return args, err
	}
	// Redis takes the two bytes after the data as the CRLF without
	// looking at them.
	if _, err := r.br.Discard(2); err != nil {
		return args, err
	}
	return args, nil
}

// bulkSize judges the count line "$<length>" of a bulk string.
func (r *Reader) bulkSize(line []byte) (int64, error) {
	if len(line) == 0 {
		return 0, expectedDollar('\r')
	}
	if line[0] != '$' {
		return 0, expectedDollar(line[0])
	}
	size, ok := parseInt(line[1:])
	switch {
	case !ok || size < 0 || size > r.lim.MaxBulk:
		return 0, errInvalidBulkLength
	case size > unauthMaxBulk && r.authRequired:
		return 0, errUnauthBulkLength
	}
	return size, nil
}

// readBytes appends the next size bytes of the stream to r.buf as a new
// argument, growing r.buf only as the bytes arrive.
func (r *Reader) readBytes(args [][]byte, size int) ([][]byte, error) {
	start := len(r.buf)
	for remaining := size; remaining > 0; {
		if len(r.buf) == cap(r.buf) {
			args = r.grow(args, remaining)
		}
		n := len(r.buf)
		k := min(remaining, cap(r.buf)-n)
		got, err := io.ReadFull(r.br, r.buf[n:n+k])
		r.buf = r.buf[:n+got]
		if err != nil {
			return args, err
		}
		remaining -= got
	}
	end := len(r.buf)
	return append(args, r.buf[start:end:end]), nil
}

// grow makes room in r.buf for at least min(need, growChunk) more bytes,
// never reserving more than max(len(r.buf), growChunk) beyond what it
// holds, so the buffer stays within twice the bytes received plus
// growChunk. The arguments already read are moved along: they lie back to
// back at the start of r.buf.
func (r *Reader) grow(args [][]byte, need int) [][]byte {
	n := len(r.buf)
	extra := max(n, min(need, growChunk), growMin)
	nb := make([]byte, n, n+extra)
	copy(nb, r.buf)
	off := 0
	for i, a := range args {
		end := off + len(a)
		args[i] = nb[off:end:end]
		off = end
	}
	r.buf = nb
	return args
}

// readInline reads a line up to '\n' and splits it as Redis does.
func (r *Reader) readInline(args [][]byte) ([][]byte, error) {
	line, err := r.readLine('\n', errTooBigInline)
	if err != nil {
		return args, err
	}
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	// The arguments are never longer than the line they come from, so
	// reserving its length keeps splitInline from moving r.buf.
	for cap(r.buf)-len(r.buf) < len(line) {
		args = r.grow(args, len(line))
	}
	var ok bool
	r.buf, args, ok = splitInline(r.buf, args, line)
	if !ok {
		return args, errUnbalancedQuotes
	}
	return args, nil
}

// skip discards k bytes of the current command.
func (r *Reader) skip(k int) error {
	if err := r.consume(int64(k)); err != nil {
		return err
	}
	_, err := r.br.Discard(k)
	return err
}

// readLine reads up to and including the next term byte and returns the
// bytes before it, which stay valid until the next read. Like Redis, it
// fails with tooBig once more than MaxInline bytes have come without the
// terminator. Redis looks for the terminator with strchr, which stops at a
// NUL byte: after a NUL it never finds one, and waits until more than
// MaxInline bytes have come to fail with tooBig. readLine does the same.
func (r *Reader) readLine(term byte, tooBig error) ([]byte, error) {
	limit := r.lim.MaxInline
	r.line = r.line[:0]
	for {
		chunk, err := r.br.ReadSlice(term)
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1]
		}
		if bytes.IndexByte(body, 0) >= 0 {
			return nil, r.discardPoisoned(len(r.line)+len(chunk), tooBig)
		}
		if len(r.line)+len(body) > limit {
			return nil, tooBig
		}
		if err := r.consume(int64(len(chunk))); err != nil {
			return nil, err
		}
		switch err {
		case nil:
			if len(r.line) == 0 {
				return body, nil
			}
			r.line = append(r.line, body...)
			return r.line, nil
		case bufio.ErrBufferFull:
			r.line = append(r.line, chunk...)
		default:
			return nil, err
		}
	}
}

// discardPoisoned consumes the stream after a NUL byte until more than
// MaxInline bytes have come since the start of the line, and returns
// tooBig then, as Redis does.
func (r *Reader) discardPoisoned(seen int, tooBig error) error {
	limit := r.lim.MaxInline
	for seen <= limit {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return err
			}
		}
		k := min(r.br.Buffered(), limit+1-seen)
		r.br.Discard(k) // cannot fail: k bytes are buffered
		seen += k
	}
	return tooBig
}

// parseInt parses a decimal integer as Redis's string2ll does: an optional
// '-', no '+', no leading zeros, no spaces, at most 20 characters, within
// int64.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) >= 21 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}
