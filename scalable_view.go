package bloom

import (
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bloomery/bloom/internal/cow"
)

// A ScalableView is a Scalable filter as it was at one instant, while the
// filter itself goes on changing: a consistent snapshot that copies
// nothing when it is taken. From then on, every change to the live filter
// (Add, WritePayloadAt) first copies the ViewPage-byte pages of the bit
// arrays it is about to change into the view, unless the view has
// already written them out, so a view costs at most the pages changed
// while it is open, not a copy of the filter; those pages are outside
// Go's heap and go back to the system at Close. Sub-filters the filter
// grows later are not part of it.
//
// WriteTo encodes the view as the filter's WriteTo would have at the
// instant (kind 2, docs/FORMAT.md); it holds the filter's add lock only
// while it copies each 64 KiB of the bit arrays, so Adds go on meanwhile.
// Close releases the view; a view that is never closed keeps costing a
// check per Add.
//
// Concurrency: a view is written by one goroutine at a time; the filter
// stays safe for concurrent use as documented on Scalable.
type ScalableView struct {
	s     *Scalable
	head  []byte // the kind-2 header and parameter block at the instant
	subs  []viewSub
	size  int64
	spare []byte

	// Under s.mu:
	pages  cow.Pages // sub-filters' pages as they were, copied before a change
	closed bool
}

// viewSub is one sub-filter at the instant.
type viewSub struct {
	words []uint64 // its bit array (identifies it: UnmarshalBinary replaces arrays)
	head  header   // its header, with the count at the instant
}

// ViewPage is the copy-on-write unit of a ScalableView: the bytes copied
// before the first change to them while the view is open.
const ViewPage = cow.PageSize

// viewSet is the views open on a filter (under its mu).
type viewSet []*ScalableView

// openViews finds a filter's views. A filter has no field for them (a
// server keeps millions of filters, and views are open only while a
// snapshot is written): while none is open anywhere, an Add pays one
// atomic load to know it; while some are, a map lookup.
var openViews struct {
	n atomic.Int64 // views open in the process
	m sync.Map     // *Scalable → *viewSet; a filter's entry changes under its mu
}

// viewsOf returns s's open views, or nil. The caller holds s.mu.
func viewsOf(s *Scalable) *viewSet {
	if openViews.n.Load() == 0 {
		return nil
	}
	if vs, ok := openViews.m.Load(s); ok {
		return vs.(*viewSet)
	}
	return nil
}

// View returns the filter as it is now, for writing out while Adds go on
// (see ScalableView).
func (s *Scalable) View() *ScalableView {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.filters()
	v := &ScalableView{s: s, head: s.head(fs), subs: make([]viewSub, len(fs)), pages: cow.New(len(fs))}
	v.size = int64(len(v.head))
	for i, f := range fs {
		v.subs[i] = viewSub{words: f.words(), head: f.header()}
		v.size += f.EncodedSize()
	}
	vs := viewsOf(s)
	if vs == nil {
		vs = new(viewSet)
		openViews.m.Store(s, vs)
	}
	*vs = append(*vs, v)
	openViews.n.Add(1)
	return v
}

// EncodedSize is the length of the view's encoding.
func (v *ScalableView) EncodedSize() int64 { return v.size }

// Close releases the view: the filter no longer copies pages for it.
func (v *ScalableView) Close() {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.closed {
		return
	}
	v.closed = true
	v.pages.Release()
	vs := viewsOf(s)
	*vs = slices.DeleteFunc(*vs, func(w *ScalableView) bool { return w == v })
	if len(*vs) == 0 {
		openViews.m.Delete(s)
	}
	openViews.n.Add(-1)
}

// beforeWrite is called under s.mu before bytes [off, off+n) of the bit
// array words are changed: each open view that still needs those pages
// keeps a copy of them.
func (vs viewSet) beforeWrite(words []uint64, off, n uint64) {
	for _, v := range vs {
		for i := range v.subs {
			if sameArray(v.subs[i].words, words) {
				v.save(i, off, n)
			}
		}
	}
}

// beforeAdd is beforeWrite for the bits an Add of h into f sets.
func (vs viewSet) beforeAdd(f *Filter, h Hash) {
	last := ^uint64(0)
	f.forEachOffset(h, func(x uint64) {
		if page := x / 8 / ViewPage; page != last {
			vs.beforeWrite(f.words(), page*ViewPage, 1)
			last = page
		}
	})
}

// save keeps the pages of sub-filter i that hold bytes [off, off+n), as
// they are now, unless written out or kept already. The caller holds
// s.mu.
func (v *ScalableView) save(i int, off, n uint64) {
	words := v.subs[i].words
	v.pages.Keep(i, off, n, uint64(len(words))*8, func(dst []byte, start uint64) { copyLE(dst, words, start) })
}

// WriteTo writes the view's encoding to w (io.WriterTo): the filter's
// encoding at the instant the view was taken.
func (v *ScalableView) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(v.head)
	total := int64(n)
	if err != nil {
		return total, fmt.Errorf("bloom: write scalable header: %w", err)
	}
	for i := range v.subs {
		n, err := v.writeSub(w, i)
		total += n
		if err != nil {
			return total, fmt.Errorf("bloom: sub-filter %d: %w", i, err)
		}
	}
	return total, nil
}

// writeSub writes sub-filter i's kind-1 encoding.
func (v *ScalableView) writeSub(w io.Writer, i int) (int64, error) {
	sub := &v.subs[i]
	n, err := w.Write(sub.head.marshal())
	total := int64(n)
	if err != nil {
		return total, fmt.Errorf("bloom: write header: %w", err)
	}
	size := uint64(len(sub.words)) * 8
	crc := uint32(0)
	for off := uint64(0); off < size; off += cow.ChunkSize {
		chunk := v.copyOut(i, off, min(cow.ChunkSize, size-off))
		crc = crc32.Update(crc, castagnoli, chunk)
		n, err := w.Write(chunk)
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("bloom: write payload: %w", err)
		}
	}
	return writeTrailer(w, crc, total)
}

// copyOut returns bytes [off, off+n) of sub-filter i as they were at the
// instant (valid until the next call), and marks their pages written
// out. off is a multiple of ViewPage.
func (v *ScalableView) copyOut(i int, off, n uint64) []byte {
	if cap(v.spare) < int(n) {
		v.spare = make([]byte, n)
	}
	buf := v.spare[:n]
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	copyLE(buf, v.subs[i].words, off) // no Add runs: they hold s.mu
	v.pages.Overlay(i, off, buf)
	return buf
}

// copyLE copies the little-endian bytes [off, off+len(dst)) of words.
func copyLE(dst []byte, words []uint64, off uint64) {
	if littleEndian {
		copy(dst, wordBytes(words)[off:])
		return
	}
	for j := range dst {
		pos := off + uint64(j)
		dst[j] = byte(words[pos/8] >> (8 * (pos % 8)))
	}
}

// sameArray reports whether a and b are the same bit array.
func sameArray(a, b []uint64) bool {
	return len(a) == len(b) && len(a) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}
