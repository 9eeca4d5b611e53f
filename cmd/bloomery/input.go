package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// Items for build, check and dedup: the lines of the inputs (without
// their '\n'), or with -0 the records each ended by a NUL byte. An item is
// exactly the bytes between two separators: an empty line is the empty
// item, a '\r' before '\n' stays in the item, and a last item without a
// separator still counts. Inputs are files, "-" being standard input, and
// none means standard input; each ends its last item.

const (
	readBufSize  = 1 << 20  // bytes per read
	maxBatch     = 8192     // items per batch
	maxItemBytes = 64 << 20 // longest item accepted
)

// itemReader splits one input into batches of items that point into its
// read buffer: no copy and no allocation per item.
type itemReader struct {
	r          io.Reader
	sep        byte
	buf        []byte
	start, end int      // unsplit input is buf[start:end]
	eof        bool     // r returned io.EOF
	items      [][]byte // the batch, reused
	read       int64    // bytes read from r
}

func newItemReader(sep byte) *itemReader {
	return &itemReader{sep: sep, buf: make([]byte, readBufSize), items: make([][]byte, 0, maxBatch)}
}

// reset makes ir read r from its start, keeping the buffers.
func (ir *itemReader) reset(r io.Reader) {
	ir.r, ir.start, ir.end, ir.eof, ir.read = r, 0, 0, false, 0
}

// next returns the next batch of up to maxBatch items, or io.EOF after the
// last one. The items are valid until the next call.
func (ir *itemReader) next() ([][]byte, error) {
	items := ir.items[:0]
	for {
		data := ir.buf[ir.start:ir.end]
		for len(items) < maxBatch {
			i := bytes.IndexByte(data, ir.sep)
			if i < 0 {
				break
			}
			items = append(items, data[:i:i])
			data = data[i+1:]
		}
		ir.start = ir.end - len(data)
		if len(items) > 0 {
			ir.items = items
			return items, nil
		}
		if ir.eof {
			if len(data) == 0 {
				return nil, io.EOF
			}
			ir.start = ir.end // the last item, without a separator
			ir.items = append(items, data[:len(data):len(data)])
			return ir.items, nil
		}
		if err := ir.fill(); err != nil {
			return nil, err
		}
	}
}

// fill moves the unsplit bytes to the front of the buffer, growing it if
// they fill it, and reads more after them.
func (ir *itemReader) fill() error {
	n := copy(ir.buf, ir.buf[ir.start:ir.end])
	ir.start, ir.end = 0, n
	if n == len(ir.buf) {
		if n >= maxItemBytes {
			return fmt.Errorf("an item (line) is longer than %s, at byte %d", humanBytes(maxItemBytes), ir.read-int64(n))
		}
		grown := make([]byte, min(2*len(ir.buf), maxItemBytes))
		copy(grown, ir.buf[:n])
		ir.buf = grown
	}
	m, err := ir.r.Read(ir.buf[n:])
	ir.end += m
	ir.read += int64(m)
	switch {
	case errors.Is(err, io.EOF):
		ir.eof = true
	case err != nil:
		return err
	}
	return nil
}

// inputSet is the inputs of a command: named files ("-" for standard
// input), or standard input alone.
type inputSet struct {
	names []string // as given; "-" is stdin
	stdin io.Reader
	total int64 // bytes in all inputs, or -1 when some size is unknown
}

// newInputSet checks that the named inputs exist and are readable files,
// before any work, and adds up their sizes.
func newInputSet(names []string, stdin io.Reader) (*inputSet, error) {
	if len(names) == 0 {
		names = []string{"-"}
	}
	in := &inputSet{names: names, stdin: stdin}
	for _, name := range names {
		size := int64(-1)
		if name == "-" {
			size = stdinSize(stdin)
		} else {
			st, err := os.Stat(name)
			if err != nil {
				return nil, err
			}
			if st.IsDir() {
				return nil, fmt.Errorf("%s: is a directory", name)
			}
			if st.Mode().IsRegular() {
				size = st.Size()
			}
		}
		if size < 0 || in.total < 0 {
			in.total = -1
		} else {
			in.total += size
		}
	}
	return in, nil
}

// stdinSize is the bytes left in standard input when it is a regular file
// (bloomery build < file), else -1.
func stdinSize(stdin io.Reader) int64 {
	f, ok := stdin.(*os.File)
	if !ok {
		return -1
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	return st.Size() - pos
}

// each calls fn with every batch of items of every input, in order, and
// tells prog how far it is. Errors name the input.
func (in *inputSet) each(sep byte, prog *progress, fn func(items [][]byte) error) error {
	ir := newItemReader(sep)
	var done int64 // bytes of the inputs before this one
	for _, name := range in.names {
		r, closeInput, err := in.open(name)
		if err != nil {
			return err
		}
		ir.reset(r)
		for {
			items, err := ir.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				closeInput()
				return fmt.Errorf("reading %s: %w", displayName(name), err)
			}
			if err := fn(items); err != nil {
				closeInput()
				return err
			}
			prog.update(len(items), done+ir.read)
		}
		closeInput()
		done += ir.read
	}
	return nil
}

func (in *inputSet) open(name string) (io.Reader, func(), error) {
	if name == "-" {
		return in.stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// displayName names an input in messages.
func displayName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

// separator is the item separator for the -0 flag.
func separator(nul bool) byte {
	if nul {
		return 0
	}
	return '\n'
}
