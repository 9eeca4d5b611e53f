// Package prefetch asks the CPU to bring memory into its caches ahead of
// use, without waiting for it: a loop that walks many objects through
// pointers (a snapshot's keys, entries, filters and bits) can request
// the objects of the next few iterations while it works on this one, so
// their cache misses overlap instead of coming one after another. A load
// of the same memory would do that too, but it holds up the CPU's
// retirement of later instructions until it completes; a prefetch does
// not, and never faults.
//
// Line is a hint: it may do nothing (on architectures without an
// assembly version here it does nothing), and it never changes what a
// program computes. Safe for concurrent use; p may be any address, nil
// included.
package prefetch
