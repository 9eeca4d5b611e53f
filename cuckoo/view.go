package cuckoo

import (
	"errors"
	"io"
	"sync"
	"unsafe"

	"github.com/bloomery/bloom/internal/cow"
)

// A View is a Filter as it was at one instant, while the filter itself
// goes on changing: a consistent snapshot that copies nothing when it is
// taken (docs/CUCKOO.md §5). From then on, every change to the filter
// first copies the ViewPage-byte pages of bucket memory it is about to
// write into the view, unless the view has written them out already, so
// a view costs at most the pages changed while it is open, not a copy of
// the filter; those pages are outside Go's heap and go back to the system
// at Close. Sub-filters added by growth later are not part of it.
//
// WriteTo encodes the view as the filter's WriteTo would have at the
// instant (kind 4, docs/FORMAT.md), once; Close releases it. A view that is
// never closed goes on copying pages for as long as the filter changes.
//
// Concurrency: View must be called with the filter's exclusive access
// (like any change). After that, one goroutine may run WriteTo and Close
// while the filter's owner goes on changing it under its own rules
// (package doc): each change then holds the view's lock while it writes,
// and WriteTo holds it while it copies each cow.ChunkSize bytes, so they
// never touch the same memory at once.
type View struct {
	head    [2 * blockSize]byte // the encoding's header and parameter block at the instant
	subs    [][]byte            // each sub-filter's bucket memory (the filter's own arrays)
	size    int64
	spare   []byte
	written bool // WriteTo ran: the pages it wrote are kept no longer

	mu     sync.Mutex
	pages  cow.Pages // under mu: sub-filters' pages as they were, copied before a change
	closed bool      // under mu
}

// ViewPage is the copy-on-write unit of a View.
const ViewPage = cow.PageSize

var (
	// ErrViewOpen reports a View asked of a filter that has one open.
	ErrViewOpen = errors.New("cuckoo: the filter has a view open")
	// ErrViewWritten reports a View written out a second time.
	ErrViewWritten = errors.New("cuckoo: the view is written already")
)

// View returns the filter as it is now, for writing out while it goes on
// changing (see View). A filter has at most one open view: ErrViewOpen
// until the last one is closed.
func (f *Filter) View() (*View, error) {
	if v := f.view; v != nil {
		v.mu.Lock()
		closed := v.closed
		v.mu.Unlock()
		if !closed {
			return nil, ErrViewOpen
		}
	}
	v := &View{subs: make([][]byte, len(f.subs)), pages: cow.New(len(f.subs))}
	f.putHead(v.head[:])
	v.size = f.EncodedSize()
	for i := range f.subs {
		v.subs[i] = f.subs[i].data
	}
	f.view = v
	return v, nil
}

// EncodedSize is the length of the view's encoding.
func (v *View) EncodedSize() int64 { return v.size }

// Close releases the view: the filter copies no more pages for it. The
// filter lets go of it at its next change.
func (v *View) Close() {
	v.mu.Lock()
	v.closed = true
	v.pages.Release()
	v.mu.Unlock()
}

// WriteTo writes the view's encoding to w (io.WriterTo): the filter's
// encoding at the instant the view was taken. A view is written once:
// it lets go of each page as it writes it, so a second call returns
// ErrViewWritten.
func (v *View) WriteTo(w io.Writer) (int64, error) {
	if v.written {
		return 0, ErrViewWritten
	}
	v.written = true
	e := encWriter{w: w}
	e.head(v.head[:])
	for i, d := range v.subs {
		size := uint64(len(d))
		for off := uint64(0); off < size && e.err == nil; off += cow.ChunkSize {
			e.payload(i, v.copyOut(i, off, min(cow.ChunkSize, size-off)))
		}
	}
	return e.trailer()
}

// copyOut returns bytes [off, off+n) of sub-filter i as they were at the
// instant (valid until the next call), and marks their pages written
// out. off is a multiple of ViewPage.
func (v *View) copyOut(i int, off, n uint64) []byte {
	if cap(v.spare) < int(n) {
		v.spare = make([]byte, n)
	}
	buf := v.spare[:n]
	v.mu.Lock()
	defer v.mu.Unlock()
	copy(buf, v.subs[i][off:]) // no change runs: each holds v.mu
	v.pages.Overlay(i, off, buf)
	return buf
}

// save keeps the pages of data that hold bytes [off, off+n), as they are
// now, unless written out or kept already, if data is one of the view's
// sub-filters. The caller holds v.mu, taken by lockView, which lets go of
// a closed view: v is open.
func (v *View) save(data []byte, off, n uint64) {
	i := v.subOf(data)
	if i < 0 {
		return
	}
	d := v.subs[i]
	v.pages.Keep(i, off, n, uint64(len(d)), func(dst []byte, start uint64) { copy(dst, d[start:]) })
}

// subOf is the index of the view's sub-filter whose memory is data, or −1.
func (v *View) subOf(data []byte) int {
	for i, d := range v.subs {
		if len(d) == len(data) && unsafe.SliceData(d) == unsafe.SliceData(data) {
			return i
		}
	}
	return -1
}

// lockView locks the filter's view for a change and returns it, or
// returns nil and lets go of the view if it is closed. Every method that
// changes bucket memory calls it first when f.view is set, and unlocks
// the view when done; f.saving then finds it locked.
func (f *Filter) lockView() *View {
	v := f.view
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		f.view = nil
		return nil
	}
	return v
}

// saving is called before bytes [off, off+n) of s's memory change: an
// open view keeps the pages as they are. The change holds the view's
// lock (lockView).
func (f *Filter) saving(s *subFilter, off, n uint64) {
	if f.view != nil {
		f.view.save(s.data, off, n)
	}
}

// unlock releases a view locked by lockView (nil: none).
func (v *View) unlock() {
	if v != nil {
		v.mu.Unlock()
	}
}
