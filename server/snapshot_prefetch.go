package server

import (
	"unsafe"

	"github.com/bloomery/bloom/internal/prefetch"
)

// The snapshot writer walks a shard's keys in slot order, and for a
// small filter most of its time is three cache misses one after the
// other: the entry, the filter, the filter's bits (docs/BENCHMARKS.md,
// "What a snapshot of many small filters costs, and where"). prefetch
// asks for them a few keys ahead, a stage at a time: the entry and the
// key's bytes prefetchEntries ahead, the filter (read from the entry,
// which the first stage has brought in by then) prefetchFilters ahead,
// and the bits (read from the filter) prefetchBits ahead, so the misses
// of several keys overlap.
const (
	prefetchEntries = 12
	prefetchFilters = 8
	prefetchBits    = 4
)

// prefetch asks for the memory of the keys ahead of position pos of
// shard i. Only the writer calls it: it alone clears the cut's slots,
// and an entry's filter pointer does not change.
func (c *snapCut) prefetch(i, pos int) {
	slots := c.shards[i].slots
	if p := pos + prefetchEntries; p < len(slots) {
		if sl := &slots[p]; sl.e != nil {
			prefetch.Line(unsafe.Pointer(sl.e))
			prefetch.Line(unsafe.Pointer(unsafe.StringData(sl.key)))
		}
	}
	if p := pos + prefetchFilters; p < len(slots) {
		if e := slots[p].e; e != nil && e.filter != nil {
			prefetch.Line(unsafe.Pointer(e.filter))
		}
	}
	if p := pos + prefetchBits; p < len(slots) {
		if e := slots[p].e; e != nil && e.filter != nil {
			e.filter.Prefetch()
		}
	}
}
