package bloom

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// randomBlock is a block whose bits are each set with probability density.
func randomBlock(r *rand.Rand, density float64) [8]uint64 {
	var blk [8]uint64
	for i := range blk {
		for b := range 64 {
			if r.Float64() < density {
				blk[i] |= 1 << b
			}
		}
	}
	return blk
}

// forRandomBlocks calls check on n random blocks and hashes at each of
// six densities from empty to full, for every k from kFrom to
// maxStraightK. At every density strictly between, check must have
// answered both true and false, or the comparison it makes compared
// nothing.
func forRandomBlocks(t *testing.T, r *rand.Rand, n int, kFrom uint32, check func(blk [8]uint64, h Hash, k uint32) bool) {
	t.Helper()
	for _, density := range []float64{0, 0.1, 0.5, 0.8, 0.95, 1} {
		yes, total := 0, 0
		for range n {
			blk := randomBlock(r, density)
			h := Hash{H1: r.Uint64(), H2: r.Uint64()}
			for k := kFrom; k <= maxStraightK; k++ {
				if check(blk, h, k) {
					yes++
				}
				total++
			}
		}
		if density > 0 && density < 1 && (yes == 0 || yes == total) {
			t.Fatalf("density %g: true %d times of %d", density, yes, total)
		}
	}
}

// scalarAdd is addBlocked's work on a copy of blk: the block after it,
// its answer and what it added to the count.
func scalarAdd(blk [8]uint64, h Hash, k uint32) ([8]uint64, bool, uint64) {
	f := Filter{wp: &blk[0], nw: 8, k: k, mode: modeBlocked}
	isNew := f.addBlocked(h)
	return blk, isNew, f.inserted
}

// checkAsmAdd fails t unless addBlockAsm on a copy of blk sets the bits,
// answers and counts as addBlocked does.
func checkAsmAdd(t testing.TB, blk [8]uint64, h Hash, k uint32) bool {
	t.Helper()
	want, wantNew, wantCount := scalarAdd(blk, h, k)
	got, count := blk, uint64(1000)
	isNew := addBlockAsm(&got, h.H1, h.H2, k, &count)
	if got != want || isNew != wantNew || count != 1000+wantCount {
		t.Fatalf("k=%d h=%x block %x: assembly %x new %v count +%d, scalar %x new %v count +%d",
			k, h, blk, got, isNew, count-1000, want, wantNew, wantCount)
	}
	return wantNew
}

// TestAsmAddMatchesScalar checks the assembly Add against addBlocked on
// random blocks of every density, for every k it serves and k = 0: the
// same bits set, the same answer, the same count. It calls the assembly
// directly, so it runs in race-detector builds too, where Add does not
// use it.
func TestAsmAddMatchesScalar(t *testing.T) {
	forRandomBlocks(t, rand.New(rand.NewPCG(3, 5)), 5000, 0, func(blk [8]uint64, h Hash, k uint32) bool {
		return checkAsmAdd(t, blk, h, k)
	})
}

// TestNoRaceAsmAdd fills whole filters through Add, AddHash and AddHashes
// (the assembly where asmAdd is set) and a twin through addBlocked, at
// rates from k = 2 to k = 14: the bit arrays, the answers and the counts
// must be identical.
func TestNoRaceAsmAdd(t *testing.T) {
	if raceEnabled {
		t.Skip("race-detector builds add in Go (asmAdd is false); the race-free pass runs this")
	}
	if !asmAdd {
		t.Skip("no assembly Add on this platform: Add is addBlocked")
	}
	for _, p := range []float64{0.3, 0.1, 0.01, 0.001, 1e-4, 1e-5} {
		a, _ := New(5000, p)
		b, _ := New(5000, p)
		c, _ := New(5000, p)
		twin, _ := New(5000, p)
		if a.mode == modeOther {
			t.Fatalf("p=%g: k=%d is not on the hot path", p, a.k)
		}
		hs := make([]Hash, 0, 8000)
		for i := range 8000 { // past capacity, repeats at the end: some items are not new
			item := binary.LittleEndian.AppendUint64([]byte("asm:"), uint64(i%7000))
			h := a.Hash(item)
			hs = append(hs, h)
			want := twin.addBlocked(h)
			if got := a.Add(item); got != want {
				t.Fatalf("p=%g item %d: Add %v, addBlocked %v", p, i, got, want)
			}
			if got := b.AddHash(h); got != want {
				t.Fatalf("p=%g item %d: AddHash %v, addBlocked %v", p, i, got, want)
			}
		}
		added := c.AddHashes(hs)
		for name, f := range map[string]*Filter{"Add": a, "AddHash": b, "AddHashes": c} {
			if !bytes.Equal(wordBytes(f.words()), wordBytes(twin.words())) {
				t.Fatalf("p=%g: %s set other bits than addBlocked", p, name)
			}
			if f.inserted != twin.inserted {
				t.Fatalf("p=%g: %s counted %d, addBlocked %d", p, name, f.inserted, twin.inserted)
			}
		}
		if uint64(added) != twin.inserted || twin.inserted < 4000 || twin.inserted > 7000 {
			t.Fatalf("p=%g: AddHashes reported %d new, addBlocked counted %d", p, added, twin.inserted)
		}
	}
}

func FuzzAsmAdd(f *testing.F) {
	ones := bytes.Repeat([]byte{0xff}, 64)
	f.Add(make([]byte, 64), uint64(0), uint64(0), uint8(7))
	f.Add(ones, uint64(1), ^uint64(0), uint8(6))     // every probe set: not new
	f.Add(ones, uint64(7), uint64(12345), uint8(13)) // two probe words
	f.Add(append(ones[:63:63], 0x7f), uint64(3), ^uint64(0), uint8(0))
	f.Add([]byte("a block that is shorter than sixty-four bytes"), uint64(42), uint64(0x0123456789abcdef), uint8(12))
	f.Fuzz(func(t *testing.T, data []byte, h1, h2 uint64, kb uint8) {
		var raw [64]byte
		copy(raw[:], data)
		var blk [8]uint64
		for i := range blk {
			blk[i] = binary.LittleEndian.Uint64(raw[8*i:])
		}
		checkAsmAdd(t, blk, Hash{H1: h1, H2: h2}, uint32(kb)%(maxStraightK+1))
	})
}
