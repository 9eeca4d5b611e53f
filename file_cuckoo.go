package bloom

import (
	"errors"
	"io"

	"github.com/bloomery/bloom/cuckoo"
	"github.com/bloomery/bloom/internal/encio"
)

// Cuckoo filter files (kind 4) in OpenAny and LoadAny. Package cuckoo
// owns the encoding (docs/CUCKOO.md); this file only hands it the input.

// KindCuckoo is a cuckoo filter: cuckoo.Load.
const KindCuckoo Kind = cuckoo.Kind

// loadCuckoo decodes a kind-4 encoding from r (header included) with
// cuckoo.Load, at c's size limit. Its errors wrap this package's
// sentinels too (ErrFormat, ErrChecksum, ErrTooLarge), as every loader's
// do.
func loadCuckoo(r io.Reader, c config) (*cuckoo.Filter, error) {
	if left, ok := encio.Remaining(r); ok {
		r = &countedReader{r: r, left: left}
	}
	f, err := cuckoo.Load(r, cuckoo.WithMaxBytes(c.maxBytes))
	if err != nil {
		return nil, cuckooError{err}
	}
	return f, nil
}

// countedReader tells cuckoo.Load how many bytes r has left (Len), so
// that it checks sizes before allocating as it does on a bytes.Reader.
type countedReader struct {
	r    io.Reader
	left int64
}

func (c *countedReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.left -= int64(n)
	return n, err
}

func (c *countedReader) Len() int { return int(c.left) }

// cuckooError is an error of package cuckoo that also wraps the sentinel
// of this package that means the same.
type cuckooError struct{ err error }

func (e cuckooError) Error() string { return e.err.Error() }

func (e cuckooError) Unwrap() []error {
	for _, p := range [][2]error{
		{cuckoo.ErrFormat, ErrFormat},
		{cuckoo.ErrChecksum, ErrChecksum},
		{cuckoo.ErrTooLarge, ErrTooLarge},
	} {
		if errors.Is(e.err, p[0]) {
			return []error{e.err, p[1]}
		}
	}
	return []error{e.err}
}
