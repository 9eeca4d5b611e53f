//go:build !amd64 || !gc || purego

package bloom

// asmAdd is false: the assembly Add exists only on amd64 with the gc
// toolchain, and the purego tag leaves it out (probe_add_amd64.go).
const asmAdd = false

// addBlockAsm is never called where asmAdd is false; it does what the
// assembly does, so that it is correct if it ever is.
func addBlockAsm(blk *[8]uint64, h1, h2 uint64, k uint32, inserted *uint64) bool {
	var c uint64
	for j, w := range [2]uint64{h2, probeWord(Hash{H1: h1, H2: h2}, 1)} {
		if k <= uint32(j)*fieldsPerWord {
			break
		}
		n := min(k-uint32(j)*fieldsPerWord, fieldsPerWord)
		for range n {
			c |= setProbe(blk, w)
			w >>= 9
		}
	}
	if c != 0 {
		*inserted++
	}
	return c != 0
}
