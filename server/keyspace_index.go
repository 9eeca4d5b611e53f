package server

// index maps a shard's keys to their positions in its slot array: open
// addressing with linear probing, each cell holding a position and the
// low 32 bits of the key's hash, so a probe compares keys only when those
// bits agree, and growing needs no key rehashed. Deletion shifts the
// cells after the hole back (no tombstones). The load factor stays
// between 3/8 and 3/4 as it grows; compact shrinks it.
type index struct {
	cells []uint64 // 0: empty; else (position+1)<<32 | hash bits
	n     int
}

const minIndexCells = 8

// find returns the cell and the position of key (hash h) in slots, or
// -1, -1.
func (x *index) find(key string, h uint64, slots *slotArray) (cell, pos int) {
	if x.n == 0 {
		return -1, -1
	}
	mask := uint64(len(x.cells) - 1)
	tag := uint32(h)
	for i := uint64(tag) & mask; ; i = (i + 1) & mask {
		c := x.cells[i]
		if c == 0 {
			return -1, -1
		}
		if uint32(c) == tag {
			if p := int(c>>32) - 1; slots.at(p).key == key {
				return int(i), p
			}
		}
	}
}

// insert adds a key of hash h at position pos (it must not be there).
func (x *index) insert(h uint64, pos int) {
	if (x.n+1)*4 > len(x.cells)*3 {
		x.resize(max(minIndexCells, 2*len(x.cells)))
	}
	x.put(uint64(pos+1)<<32 | uint64(uint32(h)))
	x.n++
}

func (x *index) put(c uint64) {
	mask := uint64(len(x.cells) - 1)
	i := uint64(uint32(c)) & mask
	for x.cells[i] != 0 {
		i = (i + 1) & mask
	}
	x.cells[i] = c
}

// resize moves the cells into a table of n cells (a power of two).
func (x *index) resize(n int) {
	old := x.cells
	x.cells = make([]uint64, n)
	for _, c := range old {
		if c != 0 {
			x.put(c)
		}
	}
}

// remove empties cell, moving back the cells of its probe run that may
// fill the hole.
func (x *index) remove(cell int) {
	mask := uint64(len(x.cells) - 1)
	i := uint64(cell)
	for j := (i + 1) & mask; x.cells[j] != 0; j = (j + 1) & mask {
		home := uint64(uint32(x.cells[j])) & mask
		if (j-home)&mask >= (j-i)&mask { // the hole lies between home and j
			x.cells[i] = x.cells[j]
			i = j
		}
	}
	x.cells[i] = 0
	x.n--
}

// renumber maps every cell's position through to (old → new) and sizes
// the table for n keys.
func (x *index) renumber(to []uint32, n int) {
	for i, c := range x.cells {
		if c != 0 {
			x.cells[i] = uint64(to[c>>32-1]+1)<<32 | uint64(uint32(c))
		}
	}
	size := minIndexCells
	for size*3 < n*4*2 { // load ≤ 3/8: room to grow before the next resize
		size *= 2
	}
	x.resize(size)
}

// add stores key and e in a free slot (or a new one) and returns its
// position; the caller indexes it.
func (s *shard) add(key string, e *entry) int {
	s.live++
	if n := len(s.free); n > 0 {
		pos := int(s.free[n-1])
		s.free = s.free[:n-1]
		*s.slots.at(pos) = slot{key: key, e: e}
		return pos
	}
	return s.slots.push(slot{key: key, e: e})
}

// minCompact is the smallest slot array compaction bothers with.
const minCompact = 64

// maybeCompact compacts s when fewer than a quarter of its slots are
// occupied, so memory follows the number of keys down; the work is paid
// for by the deletions since the array was last that full.
func (s *shard) maybeCompact() {
	if !s.frozen && s.slots.len() >= minCompact && s.live*4 < s.slots.len() {
		s.compact()
	}
}

// compact moves the keys to the front of a new slot array, renumbers the
// index and the expiry heap, and bumps the epoch so that scans in
// progress restart the shard (positions changed).
func (s *shard) compact() {
	to := make([]uint32, s.slots.len())
	var slots slotArray
	for pos, sl := range s.slots.all {
		if sl.e != nil {
			to[pos] = uint32(slots.push(*sl))
		}
	}
	s.slots, s.free = slots, nil
	s.index.renumber(to, s.live)
	s.expiry.rebuild(s)
	s.epoch++
}
