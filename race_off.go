//go:build !race

package bloom

// raceEnabled is whether this is a race-detector build (race_on.go).
const raceEnabled = false
