package bloom

import (
	"encoding/binary"
	"math"
)

// Key sets for the accuracy tests. Each generates key i of an unbounded
// sequence of distinct keys; inserted keys are [0, n), probes [n, n+N), so
// a probe is never an inserted key. The non-random sets are adversarial:
// they differ in a few bytes only, the way real IDs do.
type keySet struct {
	name string
	// key writes key i into buf (len >= 128) and returns it.
	key func(buf []byte, i uint64) []byte
}

var keySets = []keySet{
	{"random16", func(buf []byte, i uint64) []byte {
		binary.LittleEndian.PutUint64(buf, mix64(i^0x5bd1e9955bd1e995))
		binary.LittleEndian.PutUint64(buf[8:], mix64(i+0x2545f4914f6cdd1d))
		return buf[:16]
	}},
	{"sequential", func(buf []byte, i uint64) []byte {
		return appendDecimal(append(buf[:0], "user"...), i+1)
	}},
	{"url-prefix", func(buf []byte, i uint64) []byte {
		return appendDecimal(append(buf[:0], "https://www.example.com/news/2026/11/21/section/world/articles/id="...), i)
	}},
	{"counter8", func(buf []byte, i uint64) []byte {
		binary.LittleEndian.PutUint64(buf, i)
		return buf[:8]
	}},
}

func appendDecimal(b []byte, v uint64) []byte {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		if v /= 10; v == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}

// wilsonUpper is the one-sided upper confidence bound (z = 2.326 for 99%)
// of a binomial rate after x successes in n trials.
func wilsonUpper(x, n uint64, z float64) float64 {
	fn := float64(n)
	ph := float64(x) / fn
	z2 := z * z
	return (ph + z2/(2*fn) + z*math.Sqrt(ph*(1-ph)/fn+z2/(4*fn*fn))) / (1 + z2/fn)
}

const z99 = 2.3263478740408408
