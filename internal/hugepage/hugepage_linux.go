package hugepage

import (
	"syscall"
	"unsafe"
)

// Advise asks Linux to back the whole pages of b with transparent huge
// pages, when b has at least Min bytes.
func Advise(b []byte) {
	if len(b) < Min {
		return
	}
	const page = 4096
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	first := (start + page - 1) &^ (page - 1)
	last := (start + uintptr(len(b))) &^ (page - 1)
	if last <= first {
		return
	}
	_ = syscall.Madvise(b[first-start:last-start], 14) // MADV_HUGEPAGE
}
