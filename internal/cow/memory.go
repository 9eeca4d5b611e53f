package cow

import (
	"runtime"
	"sync/atomic"
)

// The kept pages of a large array (offHeapMin bytes or more) live outside
// Go's heap, in anonymous mappings of mappingSize bytes (memory_unix.go),
// for two reasons (docs/DESIGN.md §8, step 5):
//   - A snapshot under writes keeps up to a filter's bytes of pages, and
//     lets go of them as it writes them out. On the heap they would
//     stay resident after the snapshot until the collector and then
//     the scavenger gave them back; a mapping is returned to the
//     system the moment the view closes.
//   - They would also count towards the collector's pacing, so the
//     pages a snapshot keeps would set off collections of everything
//     else the process holds.
//
// Small arrays keep theirs on the heap: a server may have a view open on
// each of a million small filters changed during a snapshot, each
// keeping a page or two, and a mapping each would cost two system calls
// and could exhaust the process's mappings (vm.max_map_count, 65530 by
// default), which Go's own heap needs too. For the same reason at most
// maxMappings are mapped at once in the process; past that, and where
// the system refuses a mapping, pages come from the heap.
//
// Pages written out are reused for the next pages kept, so a view holds
// at most as many mappings as it ever kept pages at once.

const (
	// mappingSize is the size of each mapping pages are cut from.
	mappingSize = 256 * PageSize // 1 MiB
	// offHeapMin is the smallest array whose kept pages are mapped.
	offHeapMin = 4 << 20
	// maxMappings bounds the mappings of the process: 4 GiB of pages.
	maxMappings = 4096
)

// liveMappings counts the mappings of the process.
var liveMappings atomic.Int64

// memory is where a Pages' kept pages of large arrays come from.
type memory struct {
	maps *mappings
	free [][]byte // pages written out, for reuse (each of capacity PageSize)
	next int      // bytes of the last mapping handed out
}

// mappings is what a memory has mapped. It is apart from memory so that
// a cleanup can unmap it should the memory be dropped without release.
type mappings struct {
	list [][]byte
}

func (m *mappings) unmap() {
	for _, b := range m.list {
		unmapPages(b)
		liveMappings.Add(-1)
	}
	m.list = nil
}

func newMemory() *memory {
	mem := &memory{maps: new(mappings)}
	runtime.AddCleanup(mem, (*mappings).unmap, mem.maps)
	return mem
}

// page returns a page of n ≤ PageSize bytes (capacity PageSize).
func (mem *memory) page(n uint64) []byte {
	if k := len(mem.free); k > 0 {
		b := mem.free[k-1]
		mem.free = mem.free[:k-1]
		return b[:n]
	}
	list := mem.maps.list
	if len(list) == 0 || mem.next == mappingSize {
		m, ok := newMapping()
		if !ok {
			return make([]byte, n, PageSize)
		}
		list = append(list, m)
		mem.maps.list = list
		mem.next = 0
	}
	b := list[len(list)-1][mem.next : mem.next+PageSize : mem.next+PageSize]
	mem.next += PageSize
	return b[:n]
}

// newMapping maps mappingSize bytes, unless the process has maxMappings
// already or the system refuses.
func newMapping() ([]byte, bool) {
	if liveMappings.Add(1) > maxMappings {
		liveMappings.Add(-1)
		return nil, false
	}
	b, err := mapPages(mappingSize)
	if err != nil {
		liveMappings.Add(-1)
		return nil, false
	}
	return b, true
}

// put takes back a page that page returned.
func (mem *memory) put(b []byte) { mem.free = append(mem.free, b[:PageSize]) }

// release unmaps everything: no page handed out may be used again.
func (mem *memory) release() {
	mem.maps.unmap()
	mem.free = nil
	mem.next = 0
}
