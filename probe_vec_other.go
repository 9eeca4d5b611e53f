//go:build !amd64

package bloom

// vecProbe is false: the vector Test exists only on amd64.
var vecProbe = false

// testBlockVec7 is never called where vecProbe is false; it answers as
// testBlocked does, so that it is correct if it ever is.
func testBlockVec7(blk *[8]uint64, w uint64, k uint32) bool {
	return missing(blk, w, k) == 0
}
