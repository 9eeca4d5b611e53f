package bloom

import (
	"unsafe"

	"github.com/bloomery/bloom/internal/prefetch"
)

// Prefetch asks the CPU to bring the start of the filter's first bit
// array into its caches, without waiting for it: a hint for a caller
// about to read many filters one after another (a server writing a
// snapshot of millions of small filters), so that their cache misses
// overlap. It changes nothing, and it gives up the hint rather than wait
// when an Add holds the filter.
func (s *Scalable) Prefetch() {
	if !s.mu.TryLock() {
		return
	}
	p := s.first.wp
	s.mu.Unlock()
	prefetch.Line(unsafe.Pointer(p))
}
