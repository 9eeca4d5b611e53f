package bloom

import (
	"fmt"
	"math"
	"os"
	"testing"
)

// The accuracy tests insert n distinct keys of each key set, check that
// every one answers present, and probe enough never-inserted keys that
// the one-sided 99% upper confidence bound of the measured false-positive
// rate must sit at or below the target p.
//
// They are statistical and CPU-heavy, so they run without the race
// detector (make test runs them in a second, race-free pass); under -race
// they are skipped, and the concurrency tests carry the race coverage.

func TestFPR(t *testing.T) {
	if raceEnabled {
		t.Skip("statistical accuracy tests run in make test's race-free pass")
	}
	const n = 200_000
	for _, layout := range []Layout{Blocked, Classic} {
		for _, p := range []float64{0.1, 0.01, 1e-3, 1e-4, 1e-5} {
			for _, ks := range keySets {
				t.Run(fmt.Sprintf("%s/p=%g/%s", layout, p, ks.name), func(t *testing.T) {
					t.Parallel()
					checkFPR(t, layout, n, p, ks, 0)
				})
			}
		}
	}
}

// TestFPRLong covers p = 1e-6 and 1e-7 with at least 100/p probes each.
// It takes several minutes: make fpr-long (BLOOMERY_FPR_LONG=1).
func TestFPRLong(t *testing.T) {
	if os.Getenv("BLOOMERY_FPR_LONG") == "" {
		t.Skip("set BLOOMERY_FPR_LONG=1 (make fpr-long) to run")
	}
	const n = 1_000_000
	for _, layout := range []Layout{Blocked, Classic} {
		for _, p := range []float64{1e-6, 1e-7} {
			for _, ks := range keySets {
				t.Run(fmt.Sprintf("%s/p=%g/%s", layout, p, ks.name), func(t *testing.T) {
					t.Parallel()
					checkFPR(t, layout, n, p, ks, uint64(100/p))
				})
			}
		}
	}
}

// probesFor is how many absent probes make the test pass with high
// probability (sampling noise below a third of the sizing margin) when the
// filter meets its model's expected rate.
func probesFor(expected, p float64, atLeast uint64) uint64 {
	delta := 1 - expected/p
	n := uint64(math.Ceil(40 / (delta * delta * p)))
	return max(n, atLeast, 200_000)
}

func checkFPR(t *testing.T, layout Layout, n uint64, p float64, ks keySet, minProbes uint64) {
	f, err := New(n, p, WithLayout(layout))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 128)
	for i := range n {
		f.Add(ks.key(buf, i))
	}
	for i := range n {
		if !f.Test(ks.key(buf, i)) {
			t.Fatalf("false negative: key %d %q", i, ks.key(buf, i))
		}
	}
	expected := f.Sizing().FPRAt(n)
	probes := probesFor(expected, p, minProbes)
	fp := countFalsePositives(f, ks, n, probes)
	checkRate(t, fmt.Sprintf("%.2f bits/key k=%d", f.Sizing().BitsPerKey(), f.K()), fp, probes, p, "model", expected)
}

// checkRate logs a measured false-positive rate next to the expected one
// and fails the test if its one-sided 99% upper confidence bound exceeds p.
func checkRate(t *testing.T, what string, fp, probes uint64, p float64, expectedName string, expected float64) {
	t.Helper()
	rate := float64(fp) / float64(probes)
	upper := wilsonUpper(fp, probes, z99)
	t.Logf("%s: %d/%d false positives, rate %.4g = %.3f p (%s %.3f p), 99%% upper bound %.3f p",
		what, fp, probes, rate, rate/p, expectedName, expected/p, upper/p)
	if upper > p {
		t.Errorf("false-positive rate too high: measured %.4g (99%% upper bound %.4g) > target %g", rate, upper, p)
	}
}

// countFalsePositives tests keys [n, n+probes) in batches with TestMany.
func countFalsePositives(f *Filter, ks keySet, n, probes uint64) uint64 {
	const batch = 256
	flat := make([]byte, batch*128)
	items := make([][]byte, batch)
	res := make([]bool, batch)
	var fp uint64
	for start := n; start < n+probes; start += batch {
		cnt := min(batch, n+probes-start)
		for j := range cnt {
			items[j] = ks.key(flat[j*128:(j+1)*128], start+j)
		}
		res = f.TestMany(items[:cnt], res)
		for _, r := range res {
			if r {
				fp++
			}
		}
	}
	return fp
}
