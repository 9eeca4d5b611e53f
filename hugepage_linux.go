package bloom

import (
	"syscall"
	"unsafe"
)

// hugePageMin is the smallest bit array worth backing with huge pages.
const hugePageMin = 4 << 20

// adviseHugePages asks Linux to back the words with transparent huge
// pages (MADV_HUGEPAGE). Random probes into a large filter otherwise miss
// the TLB as well as the cache on almost every operation. Best effort: an
// error (THP disabled, old kernel) changes nothing but speed.
func adviseHugePages(words []uint64) {
	size := uintptr(len(words)) * 8
	if size < hugePageMin {
		return
	}
	const page = 4096
	p := unsafe.Pointer(unsafe.SliceData(words))
	start := uintptr(p)
	first := (start + page - 1) &^ (page - 1)
	last := (start + size) &^ (page - 1)
	if last <= first {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, first-start)), last-first)
	_ = syscall.Madvise(b, 14) // MADV_HUGEPAGE
}
