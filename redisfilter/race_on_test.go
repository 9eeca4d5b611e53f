//go:build race

package redisfilter

// raceEnabled: this test binary runs under the race detector, which
// slows the client side of every round trip several times over. The
// long comparisons with the in-memory filters, one goroutine each, run
// in the race-free pass instead (make accuracy: TestNoRace…, TestFPR…);
// the concurrent tests stay under the detector.
const raceEnabled = true
