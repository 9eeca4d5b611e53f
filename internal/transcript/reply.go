package transcript

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Reply is one RESP2 or RESP3 reply as it was read: its exact bytes, and
// its parts where a later command may refer to them.
type Reply struct {
	Raw []byte
	// Type is the first byte: '+', '-', ':', '$', '*', '%', '#', '_', ',',
	// '=', '~', '>' or '('.
	Type byte
	// Value is the payload of a simple string, error, integer, bulk or
	// verbatim string, double or big number (nil for a null).
	Value []byte
	// Elems are an aggregate's elements (a map's keys and values in
	// turn); nil for a null aggregate.
	Elems []*Reply
}

// maxReplyLen bounds one bulk of a reply, so a broken peer cannot make
// ReadReply allocate without limit.
const maxReplyLen = 64 << 20

// maxDepth bounds the nesting of aggregates.
const maxDepth = 16

// ErrMalformed reports bytes that are not a RESP reply.
var ErrMalformed = errors.New("transcript: malformed reply")

// ReadReply reads one whole reply from br.
func ReadReply(br *bufio.Reader) (*Reply, error) {
	var raw []byte
	r, err := readReply(br, &raw, 0)
	if err != nil {
		return nil, err
	}
	r.Raw = raw
	return r, nil
}

func readReply(br *bufio.Reader, raw *[]byte, depth int) (*Reply, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested more than %d deep", ErrMalformed, maxDepth)
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	*raw = append(*raw, line...)
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line %q", ErrMalformed, line)
	}
	r := &Reply{Type: line[0]}
	body := line[1 : len(line)-2]
	switch r.Type {
	case '+', '-', ':', '#', ',', '(', '_':
		r.Value = append([]byte(nil), body...)
		return r, nil
	case '$', '=':
		n, err := strconv.Atoi(string(body))
		if err != nil || n < -1 || n > maxReplyLen {
			return nil, fmt.Errorf("%w: bulk length %q", ErrMalformed, body)
		}
		if n < 0 {
			return r, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, err
		}
		*raw = append(*raw, buf...)
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return nil, fmt.Errorf("%w: bulk of %d bytes not followed by CRLF", ErrMalformed, n)
		}
		r.Value = buf[:n]
		return r, nil
	case '*', '%', '~', '>':
		n, err := strconv.Atoi(string(body))
		if err != nil || n < -1 || n > 1<<20 {
			return nil, fmt.Errorf("%w: aggregate length %q", ErrMalformed, body)
		}
		if n < 0 {
			return r, nil
		}
		if r.Type == '%' {
			n *= 2
		}
		r.Elems = make([]*Reply, 0, n)
		for range n {
			e, err := readReply(br, raw, depth+1)
			if err != nil {
				return nil, err
			}
			r.Elems = append(r.Elems, e)
		}
		return r, nil
	}
	return nil, fmt.Errorf("%w: type byte %q", ErrMalformed, r.Type)
}
