//go:build !amd64 || !gc || purego

package bloom

// vecProbe is false: the vector Test exists only on amd64 with the gc
// toolchain, and the purego tag leaves it out.
var vecProbe = false

// testBlockVec7 and testBlockVec14 are never called where vecProbe is
// false; they answer as testBlocked does, so that they are correct if
// they ever are.
func testBlockVec7(blk *[8]uint64, w uint64, k uint32) bool {
	return missing(blk, w, k) == 0
}

func testBlockVec14(blk *[8]uint64, h1, h2 uint64, k uint32) bool {
	h := Hash{H1: h1, H2: h2}
	return missing(blk, h2, min(k, fieldsPerWord))|missing(blk, probeWord(h, 1), k-min(k, fieldsPerWord)) == 0
}
