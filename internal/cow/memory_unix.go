//go:build unix

package cow

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapPages maps n bytes of private anonymous memory, zeroed, and panics
// like an allocation would when the system has none to give.
func mapPages(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		panic(fmt.Sprintf("cow: map %d bytes for kept pages: %v", n, err))
	}
	return b
}

func unmapPages(b []byte) {
	if err := unix.Munmap(b); err != nil {
		panic(fmt.Sprintf("cow: unmap kept pages: %v", err))
	}
}
