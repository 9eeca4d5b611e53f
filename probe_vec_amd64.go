package bloom

import "golang.org/x/sys/cpu"

// vecProbe is whether new blocked filters with k <= 7 test on vector
// registers (probe_vec.go): the CPU and the operating system support
// AVX-512F. Tests turn it off to check the scalar path against it.
var vecProbe = cpu.X86.HasAVX512F

// testBlockVec7 reports whether the first k (1-7) probes of probe word w
// are set in blk (probe_vec_amd64.s). Only callable where vecProbe is
// true.
//
//go:noescape
func testBlockVec7(blk *[8]uint64, w uint64, k uint32) bool
