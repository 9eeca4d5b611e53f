//go:build !race

package redisfilter

// raceEnabled: see race_on_test.go.
const raceEnabled = false
