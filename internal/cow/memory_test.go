//go:build unix

package cow

import "testing"

// TestPagesReuseMemory checks that pages written out are reused for the
// next pages kept, so a view maps no more than it ever kept at once, and
// that Release lets go of every mapping.
func TestPagesReuseMemory(t *testing.T) {
	const pages = mappingSize/PageSize + 10 // two mappings' worth
	const size = 4 * pages * PageSize
	live := make([]byte, size)
	read := func(dst []byte, start uint64) { copy(dst, live[start:]) }
	p := New(1)
	for pg := uint64(0); pg < pages; pg++ {
		p.Keep(0, pg*PageSize, 1, size, read)
	}
	if got := len(p.mem.maps.list); got != 2 {
		t.Fatalf("%d mappings for %d pages kept, want 2", got, pages)
	}
	buf := make([]byte, pages*PageSize)
	p.Overlay(0, 0, buf) // every kept page written out
	if p.Kept() != 0 {
		t.Fatalf("%d pages kept after all were written out", p.Kept())
	}
	for pg := uint64(pages); pg < 2*pages; pg++ {
		live[pg*PageSize] = byte(pg)
		p.Keep(0, pg*PageSize, 1, size, read)
	}
	if got := len(p.mem.maps.list); got != 2 {
		t.Fatalf("%d mappings after keeping %d more pages in place of those written out, want 2", got, pages)
	}
	buf = make([]byte, pages*PageSize)
	for pg := uint64(pages); pg < 2*pages; pg++ {
		live[pg*PageSize] ^= 0xff // changed after it was kept
	}
	p.Overlay(0, pages*PageSize, buf)
	for pg := uint64(0); pg < pages; pg++ {
		if got, want := buf[pg*PageSize], byte(pages+pg); got != want {
			t.Fatalf("page %d reads %#x through the overlay, want the kept %#x", pages+pg, got, want)
		}
	}
	maps := p.mem.maps
	p.Release()
	if p.mem != nil || maps.list != nil {
		t.Fatal("Release kept its mappings")
	}
}

// A small array's pages are kept on the heap: no mapping for a view of a
// small filter (a snapshot may have a million of them open).
func TestPagesSmallArraysOnTheHeap(t *testing.T) {
	const size = offHeapMin - 1
	live := make([]byte, size)
	live[5*PageSize] = 7
	p := New(1)
	p.Keep(0, 5*PageSize, 1, size, func(dst []byte, start uint64) { copy(dst, live[start:]) })
	if p.mem != nil {
		t.Fatal("a mapping for the pages of an array below offHeapMin")
	}
	live[5*PageSize] = 8
	buf := make([]byte, PageSize)
	copy(buf, live[5*PageSize:])
	p.Overlay(0, 5*PageSize, buf)
	if buf[0] != 7 {
		t.Fatalf("the kept page reads %d, want 7", buf[0])
	}
	p.Release()
}

// Past maxMappings in the process, pages come from the heap, and still
// read back as kept.
func TestPagesPastMaxMappings(t *testing.T) {
	was := liveMappings.Swap(maxMappings)
	defer liveMappings.Store(was)
	const size = offHeapMin
	live := make([]byte, size)
	live[3*PageSize] = 1
	p := New(1)
	p.Keep(0, 3*PageSize, 1, size, func(dst []byte, start uint64) { copy(dst, live[start:]) })
	if n := len(p.mem.maps.list); n != 0 {
		t.Fatalf("%d mappings made past the limit", n)
	}
	live[3*PageSize] = 2
	buf := make([]byte, PageSize)
	p.Overlay(0, 3*PageSize, buf)
	if buf[0] != 1 {
		t.Fatalf("the kept page reads %d, want 1", buf[0])
	}
	p.Release()
	if got := liveMappings.Load(); got != maxMappings {
		t.Fatalf("%d mappings counted after release, want %d", got, maxMappings)
	}
}
