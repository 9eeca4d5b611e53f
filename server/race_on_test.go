//go:build race

package server

// raceEnabled: this test binary runs under the race detector, whose
// instrumentation allocates (and whose sync.Pool drops what is put back
// at random), so allocation counts are checked in the race-free pass.
const raceEnabled = true
