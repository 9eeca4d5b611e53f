package cow

import "runtime"

// The kept pages live outside Go's heap, in anonymous mappings of
// mappingSize bytes (memory_unix.go; elsewhere, ordinary allocations),
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
// Pages written out are reused for the next pages kept, so a view holds
// at most as many mappings as it ever kept pages at once.

// mappingSize is the size of each mapping pages are cut from: 64 pages.
const mappingSize = 64 * PageSize

// memory is where a Pages' kept pages come from.
type memory struct {
	maps *mappings
	free [][]byte // full pages written out, for reuse
	next int      // bytes of the last mapping handed out
}

// mappings is what a memory has mapped. It is apart from memory so that
// a cleanup can unmap it should the memory be dropped without Release.
type mappings struct {
	list [][]byte
}

func (m *mappings) unmap() {
	for _, b := range m.list {
		unmapPages(b)
	}
	m.list = nil
}

func newMemory() *memory {
	mem := &memory{maps: new(mappings)}
	runtime.AddCleanup(mem, (*mappings).unmap, mem.maps)
	return mem
}

// page returns a page of n ≤ PageSize bytes.
func (mem *memory) page(n uint64) []byte {
	if k := len(mem.free); k > 0 {
		b := mem.free[k-1]
		mem.free = mem.free[:k-1]
		return b[:n]
	}
	list := mem.maps.list
	if len(list) == 0 || mem.next == mappingSize {
		list = append(list, mapPages(mappingSize))
		mem.maps.list = list
		mem.next = 0
	}
	b := list[len(list)-1][mem.next : mem.next+PageSize : mem.next+PageSize]
	mem.next += PageSize
	return b[:n]
}

// put takes back a page that page returned.
func (mem *memory) put(b []byte) { mem.free = append(mem.free, b[:PageSize]) }

// release unmaps everything: no page handed out may be used again.
func (mem *memory) release() {
	mem.maps.unmap()
	mem.free = nil
	mem.next = 0
}
