package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestCuckooAdapters checks every cuckoo adapter: what it took tests
// present, deletes once, and is gone after.
func TestCuckooAdapters(t *testing.T) {
	const n = 20_000
	keys := Split(Keys(7, n))
	for _, name := range CuckooLibNames {
		l := NewCuckooLib(name, 2*n)
		for _, k := range keys {
			if !l.Add(k) {
				t.Fatalf("%s refused a key at half its capacity", name)
			}
		}
		for _, k := range keys {
			if !l.Test(k) {
				t.Fatalf("%s: a false negative", name)
			}
		}
		deleted := 0
		for _, k := range keys {
			if l.Delete(k) {
				deleted++
			}
		}
		if deleted != n {
			t.Errorf("%s: %d of %d deletes found the key", name, deleted, n)
		}
	}
	if NewCuckooLib("nope", n) != nil {
		t.Error("an unknown library name gave a filter")
	}
}

// cuckooSizes are the sizes of the cuckoo benchmarks: each library's
// filter is made for n keys and filled with n.
var cuckooSizes = sizesFromEnv()

// BenchmarkCuckoo times Add (filling fresh filters), Test (a random mix
// of present and absent keys on a full filter) and Delete (emptying a
// full filter; ns/op per key) for every library at every size. How many
// keys each library refused while filling is reported as refused/op.
func BenchmarkCuckoo(b *testing.B) {
	for _, n := range cuckooSizes {
		keys := Split(Keys(11, n))
		queries, _ := Queries(11, flatten(keys), n)
		for _, name := range CuckooLibNames {
			b.Run(fmt.Sprintf("n=%d/%s/Add", n, name), func(b *testing.B) { benchCuckooAdd(b, name, keys) })
			full, refused := filledCuckoo(name, keys)
			b.Run(fmt.Sprintf("n=%d/%s/Test", n, name), func(b *testing.B) {
				b.ReportAllocs()
				b.ReportMetric(float64(refused)/float64(n), "refused/key")
				hits := 0
				for i := range b.N {
					if full.Test(queries[i%n]) {
						hits++
					}
				}
				benchSink += hits
			})
			b.Run(fmt.Sprintf("n=%d/%s/Delete", n, name), func(b *testing.B) { benchCuckooDelete(b, name, keys) })
		}
	}
}

// filledCuckoo is name's filter with keys added, and how many it refused.
func filledCuckoo(name string, keys [][]byte) (CuckooLib, int) {
	l := NewCuckooLib(name, len(keys))
	refused := 0
	for _, k := range keys {
		if !l.Add(k) {
			refused++
		}
	}
	return l, refused
}

func benchCuckooAdd(b *testing.B, name string, keys [][]byte) {
	benchCuckooRounds(b, keys, func() CuckooLib { return NewCuckooLib(name, len(keys)) }, CuckooLib.Add)
}

func benchCuckooDelete(b *testing.B, name string, keys [][]byte) {
	benchCuckooRounds(b, keys, func() CuckooLib { l, _ := filledCuckoo(name, keys); return l }, CuckooLib.Delete)
}

// benchCuckooRounds times op on each key in turn, on a filter from fresh
// (untimed) every len(keys) keys.
func benchCuckooRounds(b *testing.B, keys [][]byte, fresh func() CuckooLib, op func(CuckooLib, []byte) bool) {
	b.ReportAllocs()
	n := len(keys)
	var l CuckooLib
	for i := range b.N {
		if i%n == 0 {
			b.StopTimer()
			l = fresh()
			b.StartTimer()
		}
		op(l, keys[i%n])
	}
}

// flatten joins keys into one flat buffer.
func flatten(keys [][]byte) []byte {
	out := make([]byte, 0, len(keys)*KeySize)
	for _, k := range keys {
		out = append(out, k...)
	}
	return out
}

// sizesFromEnv is 10^6 and 10^7, or the sizes in $BENCH_CUCKOO_N
// (comma-separated) to time one size alone.
func sizesFromEnv() []int {
	s := os.Getenv("BENCH_CUCKOO_N")
	if s == "" {
		return []int{1_000_000, 10_000_000}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseFloat(f, 64)
		if err != nil {
			panic(fmt.Sprintf("BENCH_CUCKOO_N: %v", err))
		}
		out = append(out, int(n))
	}
	return out
}
