//go:build unix

package bloom

import (
	"os"

	"golang.org/x/sys/unix"
)

// mmap maps the first size bytes of file read-only (PROT_READ): a write
// through the mapping faults instead of changing the file. MAP_SHARED, so
// the pages are the page cache's, shared with every process reading the
// file, not copies.
func mmap(file *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(file.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
}

func munmap(b []byte) error { return unix.Munmap(b) }
