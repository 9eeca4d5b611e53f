package cow

import (
	"bytes"
	"testing"
)

// A view of one array of 2.5 pages: changes before the writer reaches a
// page are undone in what it reads; pages written out keep nothing; the
// short last page is kept at its length.
func TestPages(t *testing.T) {
	const size = 2*PageSize + PageSize/2
	live := make([]byte, size)
	for i := range live {
		live[i] = byte(i % 251)
	}
	want := bytes.Clone(live)
	read := func(dst []byte, start uint64) { copy(dst, live[start:]) }
	p := New(1)
	change := func(off, n uint64) {
		p.Keep(0, off, n, size, read)
		for i := off; i < off+n; i++ {
			live[i] ^= 0xff
		}
	}

	change(10, 1)            // page 0
	change(PageSize-1, 2)    // pages 0 and 1
	change(2*PageSize+5, 10) // the short page 2
	if p.Kept() != 3 {
		t.Fatalf("%d pages kept, want 3", p.Kept())
	}
	change(11, 1) // page 0 again: kept already
	if p.Kept() != 3 {
		t.Fatalf("%d pages kept after a second change to a kept page, want 3", p.Kept())
	}

	got := make([]byte, 0, size)
	for off := uint64(0); off < size; off += PageSize {
		buf := bytes.Clone(live[off:min(off+PageSize, size)])
		p.Overlay(0, off, buf)
		got = append(got, buf...)
		if off == 0 {
			change(20, 1) // page 0 is written out: nothing kept
			if p.Kept() != 2 {
				t.Fatalf("%d pages kept after page 0 was written out and changed, want 2", p.Kept())
			}
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the pages read through the overlay are not the array at the instant")
	}
	if p.Kept() != 0 {
		t.Fatalf("%d pages kept after everything was written out", p.Kept())
	}
	p.Release()
}

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
