package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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

// Shape describes the replies in raw (pushes included) without the
// values that differ between servers: each element's type byte, each
// aggregate's size, and the text of simple strings, errors, booleans and
// nulls; integers, doubles, big numbers and bulk and verbatim strings are
// left out. "%2 $ : + OK" is a map of one bulk string to an integer, then
// of one to +OK.
func Shape(raw []byte) (string, error) {
	br := bufio.NewReader(bytes.NewReader(raw))
	var parts []string
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return strings.Join(parts, " "), nil
		}
		r, err := ReadReply(br)
		if err != nil {
			return "", err
		}
		parts = r.shape(parts)
	}
}

func (r *Reply) shape(parts []string) []string {
	switch r.Type {
	case '+', '-', '#', '_':
		return append(parts, string(r.Type)+string(r.Value))
	case '*', '%', '~', '>':
		n := len(r.Elems)
		if r.Type == '%' {
			n /= 2
		}
		if r.Elems == nil {
			n = -1
		}
		parts = append(parts, string(r.Type)+strconv.Itoa(n))
		for _, e := range r.Elems {
			parts = e.shape(parts)
		}
		return parts
	}
	return append(parts, string(r.Type))
}
