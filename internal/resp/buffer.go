package resp

import (
	"bufio"
	"bytes"
	"io"
)

// source is what a Reader reads from: a *bufio.Reader over a blocking
// stream, or a *Buffer an event loop fills.
type source interface {
	Peek(n int) ([]byte, error)
	Buffered() int
	ReadSlice(delim byte) ([]byte, error)
	Discard(n int) (int, error)
	Read(p []byte) (int, error)
}

var (
	_ source = (*bufio.Reader)(nil)
	_ source = (*Buffer)(nil)
)

// Buffer is the input of a connection served by an event loop: the bytes
// received and not yet read, in one growable slice. The loop reads from
// the network into Space and Commit, asks the Reader whether a whole
// command has arrived (Reader.Complete) and only then calls ReadCommand,
// which never runs out of input. Reading past what is buffered returns
// io.EOF.
//
// Bulk strings read from a Buffer are not copied: the arguments
// ReadCommand returns point into the Buffer, and stay valid until the next
// ReadCommand or the next Space, whichever comes first. A Buffer is not
// safe for concurrent use.
type Buffer struct {
	b []byte // b[r:] is unread
	r int
}

// Len returns the number of bytes received and not yet read.
func (b *Buffer) Len() int { return len(b.b) - b.r }

// Space returns room for at least n more bytes at the end of the Buffer,
// to receive into; Commit(k) then adds the first k of them. It moves the
// unread bytes to the front first when that makes the room, so it
// invalidates the arguments of the last command read.
func (b *Buffer) Space(n int) []byte {
	if cap(b.b)-len(b.b) >= n {
		return b.b[len(b.b):cap(b.b)]
	}
	unread := len(b.b) - b.r
	if b.r > 0 && cap(b.b)-unread >= n && unread <= cap(b.b)/2 {
		copy(b.b, b.b[b.r:])
		b.b, b.r = b.b[:unread], 0
		return b.b[unread:cap(b.b)]
	}
	nb := make([]byte, unread, max(unread+n, 2*cap(b.b)))
	copy(nb, b.b[b.r:])
	b.b, b.r = nb, 0
	return b.b[unread:cap(b.b)]
}

// Commit adds k bytes written into the slice the last Space returned.
func (b *Buffer) Commit(k int) { b.b = b.b[:len(b.b)+k] }

// Release drops the Buffer's memory when nothing is unread and it holds
// more than keep bytes, so an idle connection keeps little.
func (b *Buffer) Release(keep int) {
	if b.r == len(b.b) {
		b.b, b.r = b.b[:0], 0
		if cap(b.b) > keep {
			b.b = nil
		}
	}
}

// Peek returns the next n unread bytes without reading them; with fewer
// buffered, all of them and io.EOF.
func (b *Buffer) Peek(n int) ([]byte, error) {
	if n > b.Len() {
		return b.b[b.r:], io.EOF
	}
	return b.b[b.r : b.r+n], nil
}

// Buffered is Len, as bufio.Reader names it.
func (b *Buffer) Buffered() int { return b.Len() }

// ReadSlice reads up to and including the first delim; without one, it
// reads everything buffered and returns io.EOF.
func (b *Buffer) ReadSlice(delim byte) ([]byte, error) {
	rest := b.b[b.r:]
	if i := bytes.IndexByte(rest, delim); i >= 0 {
		b.r += i + 1
		return rest[:i+1], nil
	}
	b.r = len(b.b)
	return rest, io.EOF
}

// Discard skips the next n bytes (fewer, and io.EOF, if fewer are
// buffered).
func (b *Buffer) Discard(n int) (int, error) {
	if n > b.Len() {
		n = b.Len()
		b.r += n
		return n, io.EOF
	}
	b.r += n
	return n, nil
}

// Read copies unread bytes into p; io.EOF when there are none.
func (b *Buffer) Read(p []byte) (int, error) {
	if b.Len() == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	n := copy(p, b.b[b.r:])
	b.r += n
	return n, nil
}
