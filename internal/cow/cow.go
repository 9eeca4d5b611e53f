// Package cow is the copy-on-write bookkeeping of the filters' views
// (bloom.ScalableView, cuckoo.View): a view is a filter as it was at one
// instant, written out while the filter goes on changing. Before a change
// writes to one of the filter's arrays, the view keeps a copy of each
// PageSize-byte page the change touches, unless the view has written that
// page out already or kept it; the view's writer reads the live array a
// chunk at a time and puts the kept pages over what changed. So a view
// costs at most the pages changed before it writes them out; for a large
// array that memory is outside Go's heap, given back to the system by
// Release (memory.go).
//
// Concurrency: a Pages is not safe for concurrent use. Its view guards it
// with the same lock that keeps the filter's changes and the writer's
// reads of the live arrays apart.
package cow

// PageSize is the copy-on-write unit.
const PageSize = 4 << 10

// ChunkSize is how much a view's writer copies from the live arrays under
// one hold of the lock that keeps the filter's changes out, a multiple of
// PageSize: changes wait at most that long.
const ChunkSize = 64 << 10

type pageKey struct {
	array int
	page  uint64
}

// Pages is what a view keeps of arrays 0..n−1 (New): the pages copied
// before a change, and how far each array is written out.
type Pages struct {
	kept map[pageKey][]byte
	done []uint64 // pages [0, done[i]) of array i are written out
	mem  *memory  // where kept pages come from (memory.go); nil until one is
}

// New returns the bookkeeping of a view of n arrays, nothing kept or
// written yet.
func New(n int) Pages { return Pages{done: make([]uint64, n)} }

// Keep keeps the pages of array i that hold bytes [off, off+n), as read
// gives them now, unless written out or kept already. size is the array's
// length in bytes; read(dst, start) copies its bytes [start,
// start+len(dst)) into dst.
func (p *Pages) Keep(i int, off, n, size uint64, read func(dst []byte, start uint64)) {
	for page := off / PageSize; page*PageSize < off+n; page++ {
		if page < p.done[i] {
			continue
		}
		k := pageKey{i, page}
		if _, ok := p.kept[k]; ok {
			continue
		}
		if p.kept == nil {
			p.kept = make(map[pageKey][]byte)
		}
		start := page * PageSize
		var b []byte
		if size >= offHeapMin {
			if p.mem == nil {
				p.mem = newMemory()
			}
			b = p.mem.page(min(PageSize, size-start))
		} else {
			b = make([]byte, min(PageSize, size-start), PageSize)
		}
		read(b, start)
		p.kept[k] = b
	}
}

// Overlay puts the kept pages of array i that fall in buf, which holds
// the array's live bytes [off, off+len(buf)), over it, forgets them, and
// marks the array written out up to off+len(buf): later changes there
// keep nothing. off is a multiple of PageSize.
func (p *Pages) Overlay(i int, off uint64, buf []byte) {
	n := uint64(len(buf))
	for at := uint64(0); at < n; at += PageSize {
		k := pageKey{i, (off + at) / PageSize}
		if b, ok := p.kept[k]; ok {
			copy(buf[at:], b)
			delete(p.kept, k)
			if p.mem != nil {
				p.mem.put(b)
			}
		}
	}
	p.done[i] = (off + n + PageSize - 1) / PageSize
}

// Kept is the number of pages kept.
func (p *Pages) Kept() int { return len(p.kept) }

// Release forgets every kept page and gives their memory back to the
// system at once: the view is closed.
func (p *Pages) Release() {
	p.kept = nil
	if p.mem != nil {
		p.mem.release()
		p.mem = nil
	}
}
