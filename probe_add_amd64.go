//go:build gc && !purego

package bloom

// The blocked layout's Add in assembly (probe_add_amd64.s), on every
// amd64 CPU: no instruction beyond the base set. Each probe loads its
// word, sets its bit with BTSQ, which leaves the bit's old value in the
// carry flag, adds the flag to a count of the probes found set, and
// stores the word back; the item is new when the count is below k. The
// bits and answers are addBlocked's (TestAsmAddMatchesScalar,
// FuzzAsmAdd).
//
// Why: an Add on a filter larger than the caches waits for one cache
// miss, and the CPU overlaps the misses of as many consecutive Adds as
// its instruction window holds. The Go probe took about 14 instructions
// (the bit's mask built with a variable shift, the old word kept to
// tell whether the bit changed); this one takes 10 with its loop. At
// 10^7 items, k = 7, the probes alone went from 77 to 59 ns an item in a
// throwaway experiment, the same as a probe that sets its bit with one
// memory OR and reports nothing (docs/BENCHMARKS.md, "An Add in
// assembly"). The loop costs 1-2% against straight-line probes, for one
// function that serves every k up to maxStraightK.

// asmAdd is whether Add and AddHash set a blocked filter's probes with
// addBlockAsm: not in race-detector builds, which cannot see writes made
// in assembly, so a Test racing an Add would go unreported.
const asmAdd = !raceEnabled

// addBlockAsm sets the first k (1-14) probes of h = (h1, h2) in blk,
// adds 1 to *inserted if one of them was unset, and reports whether one
// was: addBlocked's work, with the count kept at *inserted. Probes 1-7 are
// fields 0-6 of h2, probes 8-14 those of probeWord(h, 1), which it
// computes itself when k > 7. k = 0 sets nothing and reports false.
//
//go:noescape
func addBlockAsm(blk *[8]uint64, h1, h2 uint64, k uint32, inserted *uint64) bool
