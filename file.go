package bloom

import (
	"fmt"
	"io"
	"os"

	"github.com/bloomery/bloom/cuckoo"
	"github.com/bloomery/bloom/internal/encio"
)

// Filter files of any kind. A tool that takes "a filter file" (bloomery
// check and info) opens it with OpenAny, which learns its kind from its
// header and reads it once, so that the file may be a pipe; it never
// needs to know the bytes of the format (docs/FORMAT.md).

// Kind is the kind of filter an encoding holds, as its header records it.
// Each kind has its own loader.
type Kind uint8

// The kinds of filter encoding.
const (
	KindFilter   Kind = kindFilter   // a Filter: Load, OpenFile
	KindScalable Kind = kindScalable // a Scalable filter: LoadScalable
	KindCounting Kind = kindCounting // a Counting filter: LoadCounting
)

// String names the kind: "filter", "scalable filter", "counting filter",
// "cuckoo filter", or "kind N" for a kind this package does not know.
func (k Kind) String() string {
	switch k {
	case KindFilter:
		return "filter"
	case KindScalable:
		return "scalable filter"
	case KindCounting:
		return "counting filter"
	case KindCuckoo:
		return "cuckoo filter"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// KindError reports an encoding of another kind than the loader reads,
// such as a Scalable filter's given to Load. It wraps ErrFormat.
type KindError struct {
	Got  Kind // the kind of the encoding
	Want Kind // the kind the loader reads
}

func (e *KindError) Error() string {
	return fmt.Sprintf("%v: the encoding is %s, not %s", ErrFormat, kindName(uint8(e.Got)), kindName(uint8(e.Want)))
}

// Unwrap returns ErrFormat.
func (e *KindError) Unwrap() error { return ErrFormat }

// File is the filter a filter file holds, of any kind, opened read-only
// by OpenAny or decoded by LoadAny. Exactly one of Filter, Scalable,
// Counting and Cuckoo is set, as Kind says. Concurrency: that of the filter it
// holds; Close must not run concurrently with its use.
type File struct {
	Kind     Kind
	Filter   *MappedFilter  // KindFilter: mapped by OpenAny from a regular file, else read into memory
	Scalable *Scalable      // KindScalable, read into memory
	Counting *Counting      // KindCounting, read into memory
	Cuckoo   *cuckoo.Filter // KindCuckoo, read into memory
}

// OpenAny opens the filter file at path, of any kind, opening and reading
// it once: a kind-1 file that is a regular file is memory-mapped as
// OpenFile maps it (WithoutPayloadCRC applies to it alone); any other kind, and any
// file that is not a regular file (a pipe, a FIFO, /dev/stdin), is read
// into memory once, in order, as LoadAny reads it. The file must hold one
// filter and nothing after it. Errors are those of OpenFile and of the
// kind's loader, and wrap ErrFormat for bytes after the filter or a kind
// this package does not know. Options: WithKey for a keyed filter,
// WithMaxBytes for a filter read into memory, WithConcurrent for a
// Scalable or Counting filter (so that it can be changed while others
// use it); WithLayout is ignored.
func OpenAny(path string, opts ...Option) (*File, error) {
	return withFile(path, func(file *os.File) (*File, error) { return openAny(file, newConfig(opts)) })
}

func openAny(file *os.File, c config) (*File, error) {
	if regularKind(file) == kindFilter {
		m, err := openFile(file, c)
		if err != nil {
			return nil, err
		}
		return &File{Kind: KindFilter, Filter: m}, nil
	}
	f, err := loadAny(file, c)
	if err == nil {
		err = checkEOF(file)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// regularKind is the kind in the header of file when it is a regular file
// with a valid header, else 0. It reads the header without moving the
// file's offset.
func regularKind(file *os.File) uint8 {
	st, err := file.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	var hb [headerSize]byte
	if _, err := file.ReadAt(hb[:], 0); err != nil {
		return 0
	}
	h, err := parseHeader(hb[:])
	if err != nil {
		return 0
	}
	return h.kind
}

// LoadAny decodes one encoding of any kind from r: it reads the header to
// learn the kind, then the rest with that kind's loader, reading r once,
// in order, and nothing after the encoding, so r may be a pipe. A Filter
// comes back as a MappedFilter read into memory (read-only; Load gives
// one you can change). Errors are those of the kind's loader, or wrap
// ErrFormat for a kind this package does not know. Options as for the
// kind's loader.
func LoadAny(r io.Reader, opts ...Option) (*File, error) {
	return loadAny(r, newConfig(opts))
}

func loadAny(r io.Reader, c config) (*File, error) {
	var hb [headerSize]byte
	h, _, err := readAnyHeader(r, &hb)
	if err != nil {
		return nil, err
	}
	again := &prefixReader{head: hb[:], r: r} // the decoders read the header too
	f := &File{Kind: Kind(h.kind)}
	switch f.Kind {
	case KindFilter:
		c.concurrent = false // nothing writes, so reads need no atomics
		var g *Filter
		if g, _, err = decode(again, c); err == nil {
			f.Filter = &MappedFilter{f: g}
		}
	case KindScalable:
		f.Scalable, err = decodeScalable(again, c)
	case KindCounting:
		f.Counting, _, err = decodeCounting(again, c)
	case KindCuckoo:
		f.Cuckoo, err = loadCuckoo(again, c)
	default:
		err = fmt.Errorf("%w: the encoding is %s", ErrFormat, kindName(h.kind))
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// prefixReader reads head, then r. It tells the bytes it has left when r
// can, so that decoders check sizes before allocating as they do on r.
type prefixReader struct {
	head []byte
	r    io.Reader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.r.Read(b)
}

func (p *prefixReader) Remaining() (int64, bool) {
	left, ok := encio.Remaining(p.r)
	return left + int64(len(p.head)), ok
}

// checkEOF reads one byte more from r, after a filter, and wants none.
func checkEOF(r io.Reader) error {
	var b [1]byte
	n, err := io.ReadFull(r, b[:])
	switch {
	case n > 0:
		return fmt.Errorf("%w: bytes after the filter", ErrFormat)
	case err != io.EOF:
		return fmt.Errorf("bloom: reading after the filter: %w", err)
	}
	return nil
}

// TestMany reports for each item whether it may be in the filter, whatever
// its kind: MappedFilter.TestMany, or Test for each item. It reuses dst if
// it is long enough.
func (f *File) TestMany(items [][]byte, dst []bool) []bool {
	if f.Filter != nil {
		return f.Filter.TestMany(items, dst)
	}
	dst = resize(dst, len(items))
	if f.Cuckoo != nil {
		return f.Cuckoo.TestMany(items, dst)
	}
	for i, it := range items {
		if f.Scalable != nil {
			dst[i] = f.Scalable.Test(it)
		} else {
			dst[i] = f.Counting.Test(it)
		}
	}
	return dst
}

// EncodedSize is the length of the filter's encoding: the size of the
// file it came from.
func (f *File) EncodedSize() int64 {
	switch {
	case f.Filter != nil:
		return f.Filter.EncodedSize()
	case f.Scalable != nil:
		return f.Scalable.EncodedSize()
	case f.Cuckoo != nil:
		return f.Cuckoo.EncodedSize()
	}
	return f.Counting.EncodedSize()
}

// Guard runs fn, which uses f, and turns a fault reading a mapped file
// into an error, as MappedFilter.Guard does; for a filter read into
// memory it just runs fn.
func (f *File) Guard(fn func()) error {
	if f.Filter != nil {
		return f.Filter.Guard(fn)
	}
	fn()
	return nil
}

// Close releases the mapping of a mapped Filter; for the other kinds it
// does nothing. The filter must not be used after Close.
func (f *File) Close() error {
	if f.Filter != nil {
		return f.Filter.Close()
	}
	return nil
}
