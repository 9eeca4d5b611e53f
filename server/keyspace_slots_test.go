package server

import (
	"strconv"
	"testing"
)

// TestSlotArray: positions hold what was pushed, in order, across chunk
// boundaries; every chunk but the last is full; once the first chunk is
// full, growing moves no slot.
func TestSlotArray(t *testing.T) {
	for _, n := range []int{0, 1, minSlots - 1, minSlots, minSlots + 1, slotChunk - 1, slotChunk, slotChunk + 1, 5*slotChunk + 3} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			var a slotArray
			var first *slot
			for i := range n {
				e := &entry{expireAt: int64(i)}
				if pos := a.push(slot{key: strconv.Itoa(i), e: e}); pos != i {
					t.Fatalf("push %d: position %d", i, pos)
				}
				if i == slotChunk {
					first = a.at(0)
				}
			}
			if a.len() != n {
				t.Fatalf("len %d, want %d", a.len(), n)
			}
			for i := range n {
				if sl := a.at(i); sl.key != strconv.Itoa(i) || sl.e.expireAt != int64(i) {
					t.Fatalf("position %d holds %q", i, sl.key)
				}
			}
			next := 0
			for pos, sl := range a.all {
				if pos != next || sl != a.at(pos) {
					t.Fatalf("all yields position %d (%p), want %d (%p)", pos, sl, next, a.at(next))
				}
				next++
			}
			if next != n {
				t.Fatalf("all yields %d positions, want %d", next, n)
			}
			for i, c := range a.chunks {
				if len(c) > slotChunk || (i < len(a.chunks)-1 && len(c) != slotChunk) || (i > 0 && cap(c) != slotChunk) {
					t.Fatalf("chunk %d of %d: len %d, cap %d", i, len(a.chunks), len(c), cap(c))
				}
			}
			if first != nil && first != a.at(0) {
				t.Fatal("position 0 moved after the first chunk was full")
			}
		})
	}
}

// TestSlotArrayAllStops: all stops when its yield says so.
func TestSlotArrayAllStops(t *testing.T) {
	var a slotArray
	for i := range 3 * slotChunk {
		a.push(slot{key: strconv.Itoa(i)})
	}
	seen := 0
	for pos := range a.all {
		seen++
		if pos == slotChunk+1 {
			break
		}
	}
	if seen != slotChunk+2 {
		t.Fatalf("saw %d positions, want %d", seen, slotChunk+2)
	}
}
