package server

import "runtime"

// afterEachGC sends on ch, without waiting, after each garbage
// collection until done is closed. The memory backend sets Go's soft
// memory limit from the live heap (setMemoryLimit); read only ten times
// a second, the limit lagged behind a jump of the live heap (a new
// sub-filter, a snapshot's copied pages), and in between the collector
// ran back to back against the old limit: 140 collections in 4 s of
// BF.MADD at -P 16 with a room of 4 MiB (docs/BENCHMARKS.md, "The
// memory backend's room for garbage"). Read after each collection, the
// limit follows the heap at once.
//
// It works by a finalizer on an object only the finalizer holds: each
// collection finds the object unreachable and runs the finalizer, which
// sets itself again.
func afterEachGC(ch chan<- struct{}, done <-chan struct{}) {
	type sentinel struct{ _ *byte } // with a pointer: an object of its own, not a tiny block shared with others
	var rearm func(*sentinel)
	rearm = func(s *sentinel) {
		select {
		case <-done:
			return
		default:
		}
		select {
		case ch <- struct{}{}:
		default:
		}
		runtime.SetFinalizer(s, rearm)
	}
	runtime.SetFinalizer(&sentinel{}, rearm)
}
