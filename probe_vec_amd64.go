//go:build gc && !purego

package bloom

import "golang.org/x/sys/cpu"

// vecProbe is whether new blocked filters test on vector registers
// (probe_vec.go): the CPU and the operating system support AVX-512F, and
// this is not a race-detector build (which cannot see reads made in
// assembly, so a Test racing an Add would go unreported).
var vecProbe = cpu.X86.HasAVX512F && !raceEnabled

// testBlockVec7 reports whether the first k (1-7) probes of probe word w
// are set in blk (probe_vec_amd64.s). Only callable where vecProbe is
// true.
//
//go:noescape
func testBlockVec7(blk *[8]uint64, w uint64, k uint32) bool

// testBlockVec14 reports whether the first k (8-14) probes of h = (h1,
// h2) are set in blk (probe_vec_amd64.s). Only callable where vecProbe
// is true.
//
//go:noescape
func testBlockVec14(blk *[8]uint64, h1, h2 uint64, k uint32) bool
