package bench

import (
	"fmt"
	"math/bits"

	"github.com/bloomery/bloom"
)

// floorAdd is the cheapest add of a blocked filter's k bits (see
// FloorAdd): one XXH3-128 hash, one 64-byte block picked by its high
// half, and k memory ORs into that block, reporting nothing. Its test
// reads the same k bits. It bounds what any blocked add of k bits can
// reach in this harness: ours reports whether the item was new and
// counts it, blobloom sets k-1 bits and reports nothing.
type floorAdd struct {
	words  []uint64
	blocks uint64
	k      int
}

func newFloorAdd(n uint64, p float64) (*floorAdd, error) {
	f, err := bloom.New(n, p)
	if err != nil {
		return nil, err
	}
	blocks := f.Bits() / 512
	return &floorAdd{words: make([]uint64, blocks*8), blocks: blocks, k: int(f.K())}, nil
}

func (f *floorAdd) Name() string { return FloorAdd }
func (f *floorAdd) Bits() uint64 { return uint64(len(f.words)) * 64 }
func (f *floorAdd) K() string    { return fmt.Sprint(f.k) }

// block is key's block and its probe bits: nine bits a probe, the
// first seven from the hash's low half, any more from its high half's
// low bits (the block index uses the high bits).
func (f *floorAdd) block(key []byte) (*[8]uint64, uint64, uint64) {
	h := bloom.HashBytes(key)
	b, _ := bits.Mul64(h.H1, f.blocks)
	return (*[8]uint64)(f.words[b*8 : b*8+8]), h.H2, h.H1
}

func (f *floorAdd) AddFlat(buf []byte) {
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		blk, x, y := f.block(buf[i : i+KeySize : i+KeySize])
		for j := range f.k {
			if j == 7 {
				x = y
			}
			blk[x>>6&7] |= 1 << (x & 63)
			x >>= 9
		}
	}
}

func (f *floorAdd) look(key []byte) bool {
	blk, x, y := f.block(key)
	all := true
	for j := range f.k {
		if j == 7 {
			x = y
		}
		all = all && blk[x>>6&7]&(1<<(x&63)) != 0
		x >>= 9
	}
	return all
}

func (f *floorAdd) TestFlat(buf []byte) int {
	c := 0
	for i := 0; i+KeySize <= len(buf); i += KeySize {
		c += b2i(f.look(buf[i : i+KeySize : i+KeySize]))
	}
	return c
}

func (f *floorAdd) TestAll(keys [][]byte) int {
	c := 0
	for _, k := range keys {
		if f.look(k) {
			c++
		}
	}
	return c
}

func (f *floorAdd) TestCount(keys [][]byte) int {
	c := 0
	for _, k := range keys {
		c += b2i(f.look(k))
	}
	return c
}
