package bench

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// cuckooBlock is how many operations one library runs before the next
// takes its turn in BenchmarkCuckooInterleaved.
const cuckooBlock = 1 << 14

// BenchmarkCuckooInterleaved times Add, Test and Delete for every
// library at once, taking turns in blocks of cuckooBlock operations, so
// that every library meets the same noise of a shared machine; it
// reports each library's median ns per operation over rounds
// (-benchtime Nx sets N rounds; each round does n operations per
// library). Add fills fresh filters; Test runs the query mix on full
// ones; Delete empties full ones.
func BenchmarkCuckooInterleaved(b *testing.B) {
	for _, n := range cuckooSizes {
		keys := Split(Keys(11, n))
		queries, _ := Queries(11, flatten(keys), n)
		for _, op := range []string{"Add", "Test", "Delete"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, op), func(b *testing.B) {
				times := make([][]float64, len(CuckooLibNames))
				for range b.N {
					for i, d := range cuckooRound(op, keys, queries) {
						times[i] = append(times[i], float64(d.Nanoseconds())/float64(n))
					}
				}
				for i, name := range CuckooLibNames {
					slices.Sort(times[i])
					b.ReportMetric(times[i][len(times[i])/2], name+"-ns/op")
				}
			})
		}
	}
}

// cuckooRound runs op on n keys for every library, taking turns, and
// returns each library's time.
func cuckooRound(op string, keys, queries [][]byte) []time.Duration {
	libs := make([]CuckooLib, len(CuckooLibNames))
	for i, name := range CuckooLibNames {
		if op == "Add" {
			libs[i] = NewCuckooLib(name, len(keys))
		} else {
			libs[i], _ = filledCuckoo(name, keys)
		}
	}
	work := keys
	if op == "Test" {
		work = queries
	}
	spent := make([]time.Duration, len(libs))
	hits := 0
	for lo := 0; lo < len(work); lo += cuckooBlock {
		block := work[lo:min(lo+cuckooBlock, len(work))]
		for i, l := range libs {
			start := time.Now()
			for _, k := range block {
				var ok bool
				switch op {
				case "Add":
					ok = l.Add(k)
				case "Test":
					ok = l.Test(k)
				default:
					ok = l.Delete(k)
				}
				if ok {
					hits++
				}
			}
			spent[i] += time.Since(start)
		}
	}
	benchSink += hits
	return spent
}
