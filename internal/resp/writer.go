package resp

import (
	"io"
	"math"
	"strconv"
	"strings"
)

// Writer writes replies in RESP2 or RESP3 to an io.Writer. It starts in
// RESP2, as a Redis connection does; HELLO 3 switches it with SetProtocol.
//
// Replies are appended to the Writer's own buffer and nothing reaches dst
// until Flush: the buffer grows as needed and is never written behind the
// caller's back. A server relies on this to send no reply before the
// changes it acknowledges are durable, and to replace buffered replies
// (Bytes, Reset) when they cannot be. After a failed Flush the Writer
// keeps the error and writes nothing more. A Writer is not safe for
// concurrent use.
type Writer struct {
	dst     io.Writer
	buf     []byte
	err     error
	proto   int
	scratch [64]byte // a number being formatted
}

// NewWriter returns a Writer of RESP2 replies to dst.
func NewWriter(dst io.Writer) *Writer {
	return &Writer{dst: dst, proto: 2}
}

// maxKeptBuffer bounds the buffer a Writer keeps for reuse after a Flush:
// one large reply (a 16 MiB BF.SCANDUMP chunk) is not held for ever.
const maxKeptBuffer = 64 << 10

// Flush writes the buffered replies to dst and returns the first write
// error, if any (then and ever after).
func (w *Writer) Flush() error {
	if w.err == nil && len(w.buf) > 0 {
		_, w.err = w.dst.Write(w.buf)
	}
	w.Reset()
	return w.err
}

// Buffered returns the number of bytes of replies not yet flushed.
func (w *Writer) Buffered() int { return len(w.buf) }

// Bytes returns the buffered replies, valid until the next write.
func (w *Writer) Bytes() []byte { return w.buf }

// Reset discards the buffered replies.
func (w *Writer) Reset() {
	if cap(w.buf) > maxKeptBuffer {
		w.buf = nil
	}
	w.buf = w.buf[:0]
}

// Raw appends b, which must be whole replies, as it is.
func (w *Writer) Raw(b []byte) { w.buf = append(w.buf, b...) }

// SetProtocol sets the protocol version of the replies that follow: 2 or
// 3. Any other version panics; HELLO answers "NOPROTO" before calling it.
func (w *Writer) SetProtocol(version int) {
	if version != 2 && version != 3 {
		panic("resp: protocol version " + strconv.Itoa(version) + " is not 2 or 3")
	}
	w.proto = version
}

// Protocol returns the protocol version in use, 2 or 3.
func (w *Writer) Protocol() int { return w.proto }

// SimpleString writes "+s\r\n". A '\r' or '\n' in s is written as a
// space, so the reply stays one line.
func (w *Writer) SimpleString(s string) {
	w.byte('+')
	w.line(s)
}

// Error writes "-msg\r\n". msg starts with the error code, as in
// "ERR unknown command" or "WRONGTYPE Operation against ..."; a '\r' or
// '\n' in it is written as a space, as Redis does, so the reply stays one
// line.
func (w *Writer) Error(msg string) {
	w.byte('-')
	w.line(msg)
}

// line writes s, with '\r' and '\n' mapped to spaces, and a CRLF.
func (w *Writer) line(s string) {
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			w.str(s)
			break
		}
		w.str(s[:i])
		w.byte(' ')
		s = s[i+1:]
	}
	w.str("\r\n")
}

// Integer writes ":n\r\n".
func (w *Writer) Integer(n int64) { w.header(':', n) }

// Bulk writes b as a bulk string, "$len\r\nb\r\n"; a nil b is an empty
// bulk string, not a null (see Null).
func (w *Writer) Bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.Raw(b)
	w.str("\r\n")
}

// BulkString writes s as a bulk string.
func (w *Writer) BulkString(s string) {
	w.header('$', int64(len(s)))
	w.str(s)
	w.str("\r\n")
}

// Verbatim writes text as a verbatim string of the given three-letter
// format ("txt" or "mkd"), as Redis answers INFO and CLIENT INFO: in RESP3
// "=len\r\ntxt:text\r\n", in RESP2 a plain bulk string.
func (w *Writer) Verbatim(format string, text []byte) {
	if w.proto == 2 {
		w.Bulk(text)
		return
	}
	w.header('=', int64(len(format)+1+len(text)))
	w.str(format)
	w.byte(':')
	w.Raw(text)
	w.str("\r\n")
}

// Null writes a null: "$-1\r\n" (the null bulk string) in RESP2, "_\r\n"
// in RESP3.
func (w *Writer) Null() {
	if w.proto == 2 {
		w.str("$-1\r\n")
	} else {
		w.str("_\r\n")
	}
}

// NullArray writes a null array: "*-1\r\n" in RESP2, "_\r\n" in RESP3,
// which has a single null.
func (w *Writer) NullArray() {
	if w.proto == 2 {
		w.str("*-1\r\n")
	} else {
		w.str("_\r\n")
	}
}

// ArrayHeader writes "*n\r\n"; n elements must follow.
func (w *Writer) ArrayHeader(n int) { w.header('*', int64(n)) }

// MapHeader starts a map of n key-value pairs, 2n elements that must
// follow: "%n\r\n" in RESP3, a flat array "*2n\r\n" in RESP2, as Redis
// answers HELLO, or BF.INFO under RESP3.
func (w *Writer) MapHeader(n int) {
	if w.proto == 2 {
		w.header('*', 2*int64(n))
	} else {
		w.header('%', int64(n))
	}
}

// SetHeader starts a set of n elements: "~n\r\n" in RESP3, an array
// "*n\r\n" in RESP2 (CLIENT TRACKINGINFO's flags).
func (w *Writer) SetHeader(n int) {
	if w.proto == 2 {
		w.header('*', int64(n))
	} else {
		w.header('~', int64(n))
	}
}

// PushHeader starts an out-of-band push message of n elements, ">n\r\n":
// RESP3 only (a RESP2 connection has no push messages; the caller must
// not send one there).
func (w *Writer) PushHeader(n int) { w.header('>', int64(n)) }

// Bool writes a boolean: the integer 1 or 0 in RESP2, "#t\r\n" or "#f\r\n"
// in RESP3.
func (w *Writer) Bool(b bool) {
	switch {
	case w.proto == 2 && b:
		w.str(":1\r\n")
	case w.proto == 2:
		w.str(":0\r\n")
	case b:
		w.str("#t\r\n")
	default:
		w.str("#f\r\n")
	}
}

// Double writes f formatted as Redis's addReplyDouble does, with C's
// "%.17g" (0.1 is "0.10000000000000001", 1e20 "1e+20", "inf", "-inf",
// "nan"): as a bulk string in RESP2, as ",f\r\n" in RESP3.
func (w *Writer) Double(f float64) {
	num := appendDouble(w.scratch[32:32], f)
	if w.proto == 2 {
		w.header('$', int64(len(num)))
		w.Raw(num)
		w.str("\r\n")
		return
	}
	w.byte(',')
	w.Raw(num)
	w.str("\r\n")
}

// appendDouble appends f as C's printf("%.17g") prints it with glibc.
// Go's 'g' format with a precision follows the same rule as C's (%e when
// the exponent is below -4 or at least the precision, trailing zeros
// removed, an exponent of at least two digits); only the special values
// are spelled differently.
func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f) && math.Signbit(f):
		return append(dst, "-nan"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

// WriteCommand writes args as a command: an array of bulk strings, the
// form Reader reads and Redis clients send, whatever the protocol version.
// It serves to forward commands and to append them to a log.
func (w *Writer) WriteCommand(args [][]byte) {
	w.header('*', int64(len(args)))
	for _, a := range args {
		w.Bulk(a)
	}
}

// header writes prefix, n and CRLF.
func (w *Writer) header(prefix byte, n int64) {
	w.buf = append(w.buf, prefix)
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, '\r', '\n')
}

func (w *Writer) str(s string) { w.buf = append(w.buf, s...) }
func (w *Writer) byte(c byte)  { w.buf = append(w.buf, c) }
