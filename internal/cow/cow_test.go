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
