package server

// slotArray is a shard's slots, positions 0 … len−1, in chunks of
// slotChunk slots: growing allocates a chunk and copies nothing (a slice
// doubled as it grew copied every slot each time, and left the old
// array to the collector: 8% of the CPU of BF.ADD on new keys, issue
// 11). Only the first chunk grows by doubling, from minSlots, so that a
// shard with few keys takes little. The spare capacity is at most one
// chunk (6 KiB) per shard.
type slotArray struct {
	chunks [][]slot // all slotChunk long but the last
	n      int
}

const (
	slotChunkBits = 8
	slotChunk     = 1 << slotChunkBits // 256 slots of 24 bytes: 6 KiB, a size class
	minSlots      = 8
)

// len is the number of positions.
func (a *slotArray) len() int { return a.n }

// at is the slot at pos (0 ≤ pos < len).
func (a *slotArray) at(pos int) *slot {
	return &a.chunks[pos>>slotChunkBits][pos&(slotChunk-1)]
}

// push adds sl at position len and returns it.
func (a *slotArray) push(sl slot) int {
	n := len(a.chunks)
	if n == 0 || len(a.chunks[n-1]) == slotChunk {
		size := slotChunk
		if n == 0 {
			size = minSlots
		}
		a.chunks = append(a.chunks, make([]slot, 0, size))
		n++
	}
	last := &a.chunks[n-1]
	if len(*last) == cap(*last) { // the first chunk, not yet full size
		grown := make([]slot, len(*last), min(2*cap(*last), slotChunk))
		copy(grown, *last)
		*last = grown
	}
	*last = append(*last, sl)
	a.n++
	return a.n - 1
}

// all yields every position and its slot, in order.
func (a *slotArray) all(yield func(pos int, sl *slot) bool) {
	pos := 0
	for _, c := range a.chunks {
		for i := range c {
			if !yield(pos, &c[i]) {
				return
			}
			pos++
		}
	}
}
