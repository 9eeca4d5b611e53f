package server

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate reserves n bytes of f's disk from off, keeping its size
// (fallocate with FALLOC_FL_KEEP_SIZE): appends into them cannot fail
// for lack of space.
func allocate(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, off, n)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return errNoPrealloc
		}
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
}
