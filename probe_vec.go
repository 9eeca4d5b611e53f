package bloom

// The blocked layout's Test on vector registers (modeBlockedVec): where
// the CPU has AVX-512F (vecProbe), a filter with k <= 7 tests all its
// probes at once (testBlockVec7, in probe_vec_amd64.s): one 64-byte load
// of the block, the probe word broadcast to eight lanes and shifted so
// that lane j holds probe j's 9-bit field, VPERMQ picking each probe's
// word, a rotate bringing its bit to bit 0, and one mask test. The same
// bits as testBlocked, so answers never depend on the CPU
// (TestVecProbeMatchesScalar, FuzzVecProbe).
//
// Why: a single Test on a filter larger than the caches is one cache miss
// plus the instructions around it, and the fewer instructions a key
// takes, the more keys' misses the CPU overlaps. The scalar probes took
// about 9 instructions each; the vector form about 12 for all seven.
// Measured at 10^7 items, p = 0.01 (docs/BENCHMARKS.md, "A vector Test"):
// 0.6× blobloom's Test and within 1.1× of one hash plus one load.
// Filters with k > 7 keep the scalar path: a vector form for them
// (two probe words) measured no faster than it.

// testVec is testBlocked for a modeBlockedVec filter.
func (f *Filter) testVec(h Hash) bool {
	return testBlockVec7(f.block(h), h.H2, f.k)
}
