package resp

import (
	"bufio"
	"io"
)

const (
	growChunk   = 64 << 10 // most bytes reserved ahead of what has arrived
	growMin     = 256      // least growth of the argument buffer
	retainBytes = 64 << 10 // most buffer kept between commands when idle
)

// Reader reads commands from a client. It is not safe for concurrent use.
// Any error ends the stream: after one, the Reader must not be used again.
type Reader struct {
	br   source
	in   *Buffer // br, when reading from a Buffer (bulk strings are not copied)
	lim  Limits
	buf  []byte // the arguments of the current command, back to back
	line []byte // a line longer than br's buffer, while it is assembled
	n    int64  // bytes of the current command consumed so far
	off  int64  // bytes of the stream consumed by complete commands

	authRequired bool
	scan         scanState // how far Complete has judged the next command
}

// NewReader returns a Reader of commands from br with the given limits.
// br's size does not limit what can be read: lines and bulk strings longer
// than its buffer are assembled in the Reader's own buffer.
func NewReader(br *bufio.Reader, lim Limits) *Reader {
	return &Reader{br: br, lim: lim.withDefaults(), scan: scanState{left: -1}}
}

// NewBufferReader returns a Reader of commands from b, for an event loop:
// call ReadCommand only after Complete reports true, so that it never
// runs out of input. Its arguments point into b (see Buffer).
func NewBufferReader(b *Buffer, lim Limits) *Reader {
	return &Reader{br: b, in: b, lim: lim.withDefaults(), scan: scanState{left: -1}}
}

// Limits returns the limits in force, defaults filled in.
func (r *Reader) Limits() Limits { return r.lim }

// SetAuthRequired sets whether the client still has to authenticate. While
// it does, the Reader applies Redis's limits for such clients: an array of
// more than 10 elements fails with MsgUnauthMultibulkLength and a bulk
// string longer than 16384 bytes with MsgUnauthBulkLength. A server with a
// password sets it on connect and clears it after a successful AUTH or
// HELLO AUTH.
func (r *Reader) SetAuthRequired(required bool) {
	r.authRequired = required
	r.scan = scanState{left: -1}
}

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
	r.scan = scanState{left: -1}
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
// command used less than a quarter of it; and the buffer of long lines,
// rarely needed, whenever the connection is about to wait.
func (r *Reader) release() {
	idle := r.br.Buffered() == 0
	if c := cap(r.buf); c > retainBytes && (idle || len(r.buf) < c/4) {
		r.buf = nil
	}
	if idle || cap(r.line) > retainBytes {
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
	if args, ok := r.readBufferedBulk(args); ok {
		return args, nil
	}
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

// readBufferedBulk is readBulk's fast path for a well-formed bulk string
// of fewer than 10^9 bytes that lies whole in br's buffer, the usual case
// in a pipeline: it parses and copies it in one step. Anything else it
// leaves unread and returns false, for readBulk's general path to read or
// to refuse.
func (r *Reader) readBufferedBulk(args [][]byte) ([][]byte, bool) {
	if r.authRequired {
		return args, false
	}
	b, _ := r.br.Peek(r.br.Buffered()) // cannot fail: the bytes are buffered
	size, i, ok := r.shortBulkHeader(b)
	total := i + 2 + size + 2 // "$<length>\r?" then the bytes and two more
	if !ok || total > len(b) || r.n+int64(total) > r.lim.MaxQueryBuffer {
		return args, false
	}
	if r.in != nil {
		// The bytes stay where they are, in the Buffer.
		r.br.Discard(total) // cannot fail: the bytes are buffered
		r.n += int64(total)
		return append(args, b[i+2:i+2+size:i+2+size]), true
	}
	// The bytes have arrived, so reserving them all keeps the bound.
	for cap(r.buf)-len(r.buf) < size {
		args = r.grow(args, size)
	}
	start := len(r.buf)
	r.buf = append(r.buf, b[i+2:i+2+size]...)
	r.br.Discard(total) // cannot fail: the bytes are buffered
	r.n += int64(total)
	end := len(r.buf)
	return append(args, r.buf[start:end:end]), true
}

// shortBulkHeader parses the header of a bulk string at the start of b
// for the fast paths (readBufferedBulk, scanBulkHeader): "$", 1 to 9
// digits with no leading zero, within MaxInline and MaxBulk, then '\r'.
// It returns the length and the index of the '\r'; ok is false for
// anything else, which the general paths judge.
func (r *Reader) shortBulkHeader(b []byte) (size, i int, ok bool) {
	if len(b) < 4 || b[0] != '$' {
		return 0, 0, false
	}
	i = 1
	for ; i < len(b) && i < 11 && '0' <= b[i] && b[i] <= '9'; i++ {
		size = size*10 + int(b[i]-'0')
	}
	if i == 1 || i == 11 || b[1] == '0' && i > 2 || i >= len(b) || b[i] != '\r' ||
		i > r.lim.MaxInline || int64(size) > r.lim.MaxBulk {
		return 0, 0, false
	}
	return size, i, true
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
