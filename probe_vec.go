package bloom

// The blocked layout's Test on vector registers. Where the CPU has
// AVX-512F (vecProbe), a blocked filter tests all its probes at once
// (probe_vec_amd64.s): one 64-byte load of the block; each probe word
// broadcast to eight lanes and shifted by 0, 9, …, 54 so that lane j
// holds probe j's 9-bit field; VPERMQ picking each probe's word (bits
// 6-8 of the field); a rotate bringing its bit (bits 0-5) down to bit 0;
// one mask test against the k wanted lanes. testBlockVec7 serves k <= 7
// (one probe word, modeBlockedVec7), testBlockVec14 k in [8, 14] (two,
// the second computed in the same call, modeBlockedVec14). The bits are
// the scalar path's, so answers and files never depend on the CPU
// (TestVecProbeMatchesScalar, FuzzVecProbe). A process started with
// GODEBUG=cpu.avx512f=off (read once, at start-up, by golang.org/x/sys/cpu)
// keeps every filter on the scalar path (TestVecProbeGodebug), as do
// race-detector builds and the purego build tag.
//
// Why: a single Test on a filter larger than the caches is one cache miss
// plus the instructions around it, and each instruction a key takes
// leaves fewer keys' misses in flight at once: about 0.9 ns a key for
// every instruction added at 10^7 items (docs/BENCHMARKS.md, "A vector
// Test"). The scalar probes take about 9 instructions each; the vector
// form about 15 for seven, 35 for fourteen including the second probe
// word. (Measured on AMD Zen 4; Intel's Skylake-SP and Cascade Lake lower
// their clock while running 512-bit instructions, so there
// GODEBUG=cpu.avx512f=off may be worth a comparison.) Test, TestHash
// and TestHashes call the assembly directly from
// their switch on the mode: a Go function between them, too large to
// inline with both cases, cost k = 9 a third of its speed.
