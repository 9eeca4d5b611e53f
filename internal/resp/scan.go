package resp

import "bytes"

// Complete is the pre-scan of an event loop: it tells, without reading
// anything, whether ReadCommand would return without needing more input
// than is buffered. It walks the buffered bytes as ReadCommand would, with
// the same limits judged by the same functions in the same order, and
// remembers how far it got, so each call judges only what arrived since
// the last one (a line is judged again whole until its terminator comes;
// a bulk string's bytes are only counted).
//
// It reports true when a command after any empty ones has arrived whole,
// or when the bytes buffered already fail the way ReadCommand would fail
// on them (a protocol error or the query buffer limit): ReadCommand then
// returns that command or that error. It reports false when more bytes
// are needed. It is meant for a Reader over a Buffer.
func (r *Reader) Complete() bool {
	b, _ := r.br.Peek(r.br.Buffered()) // cannot fail: the bytes are buffered
	s := &r.scan
	for {
		if s.left < 0 {
			if s.at >= len(b) {
				return false
			}
			s.n = 0
			if b[s.at] != '*' {
				line, end, st := r.scanLine(b, s.at, '\n')
				if st != lineOK {
					return st == lineFailed
				}
				if len(bytes.TrimLeft(line, " \t\n\v\f\r")) > 0 {
					return true // arguments, or unbalanced quotes
				}
				s.at = end // a blank line: skipped
				continue
			}
			count, end, st := r.scanCountLine(b, s.at, (*Reader).arrayCount)
			if st != lineOK {
				return st == lineFailed
			}
			s.at = end
			if count <= 0 {
				continue // an empty array: skipped
			}
			s.left = count
		}
		for s.left > 0 {
			size, end, ok := r.scanBulkHeader(b, s.at)
			if !ok {
				var st lineStatus
				size, end, st = r.scanCountLine(b, s.at, (*Reader).bulkSize)
				if st != lineOK {
					return st == lineFailed
				}
			}
			if s.n+size+2 > r.lim.MaxQueryBuffer {
				return true // consume fails before the bytes are read
			}
			if int64(len(b)-end) < size+2 {
				s.n -= int64(end - s.at) // the header is judged again with its bytes
				return false
			}
			s.n += size + 2
			s.at = end + int(size) + 2
			s.left--
		}
		return true
	}
}

// lineStatus is the verdict on a line of the pre-scan.
type lineStatus uint8

const (
	lineOK     lineStatus = iota // whole and within the limits
	lineMore                     // more bytes are needed to judge it
	lineFailed                   // ReadCommand fails on it
)

// scanLine judges the line at b[from:] up to term as readLine does and,
// when it passes, counts its bytes in r.scan.n and returns it (without
// term) and where it ends (after term).
func (r *Reader) scanLine(b []byte, from int, term byte) ([]byte, int, lineStatus) {
	rest := b[from:]
	i := bytes.IndexByte(rest, term)
	body, chunk := rest, len(rest)
	if i >= 0 {
		body, chunk = rest[:i], i+1
	}
	limit := r.lim.MaxInline
	switch {
	case bytes.IndexByte(body, 0) >= 0:
		// discardPoisoned fails once more than limit bytes have come.
		if len(rest) > limit {
			return nil, 0, lineFailed
		}
		return nil, 0, lineMore
	case len(body) > limit, r.scan.n+int64(chunk) > r.lim.MaxQueryBuffer:
		return nil, 0, lineFailed
	case i < 0:
		return nil, 0, lineMore
	}
	r.scan.n += int64(chunk)
	return body, from + chunk, lineOK
}

// scanCountLine judges a count line as readCountLine does: the line, the
// byte after its '\r', then the verdict of judge.
func (r *Reader) scanCountLine(b []byte, from int, judge func(*Reader, []byte) (int64, error)) (int64, int, lineStatus) {
	line, end, st := r.scanLine(b, from, '\r')
	if st != lineOK {
		return 0, 0, st
	}
	n, err := judge(r, line)
	switch {
	case r.scan.n+1 > r.lim.MaxQueryBuffer:
		return 0, 0, lineFailed
	case end >= len(b):
		r.scan.n -= int64(end - from)
		return 0, 0, lineMore
	case err != nil:
		return 0, 0, lineFailed
	}
	r.scan.n++
	return n, end + 1, lineOK
}

// scanBulkHeader is the pre-scan's fast path for the header of a bulk
// string, "$<length>\r" and one more byte, as readBufferedBulk is the
// parser's (both parse it with shortBulkHeader): when the header at
// b[from:] is whole and passes every limit, it counts its bytes as
// scanCountLine would and returns the length and where the bytes start.
// Anything else (and every header while AUTH is required) it leaves to
// scanCountLine, which judges it as ReadCommand would. A pipeline of small
// commands spent about 6% of a server's CPU in the pre-scan without it.
func (r *Reader) scanBulkHeader(b []byte, from int) (size int64, end int, ok bool) {
	if r.authRequired {
		return 0, 0, false
	}
	n, i, ok := r.shortBulkHeader(b[from:])
	if !ok || from+i+1 >= len(b) || r.scan.n+int64(i)+2 > r.lim.MaxQueryBuffer {
		return 0, 0, false
	}
	r.scan.n += int64(i) + 2 // the line, its '\r' and the byte after it
	return int64(n), from + i + 2, true
}

// scanState is how far Complete has judged the input: the empty commands
// skipped and the whole elements of the command after them. Offsets count
// from the first unread byte, which only ReadCommand moves; ReadCommand
// and SetAuthRequired start the judging over.
type scanState struct {
	at   int   // bytes judged so far
	left int64 // bulk strings still to come in the current array; -1 at a command's start
	n    int64 // the current command's bytes judged, as consume counts them
}
