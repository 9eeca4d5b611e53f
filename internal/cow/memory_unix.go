//go:build unix

package cow

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapPages maps n bytes of private anonymous memory, zeroed.
func mapPages(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
}

// unmapPages unmaps what mapPages mapped; failing, the process's memory
// is not what it believes, and it stops.
func unmapPages(b []byte) {
	if err := unix.Munmap(b); err != nil {
		panic(fmt.Sprintf("cow: unmap kept pages: %v", err))
	}
}
