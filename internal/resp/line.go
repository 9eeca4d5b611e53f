package resp

import (
	"bufio"
	"bytes"
	"math"
)

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
