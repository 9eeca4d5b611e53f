//go:build race

package bloom

// raceEnabled is whether this is a race-detector build. The detector
// cannot see reads made in assembly, so such builds keep the scalar Test
// (probe_vec_amd64.go), and some tests skip work that it makes too slow.
const raceEnabled = true
