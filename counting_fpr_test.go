package bloom

import (
	"fmt"
	"testing"
)

// TestFPRCounting is the accuracy test of the counting filter, like
// TestFPR (fpr_test.go): n distinct keys of each key set (random and
// adversarial) added, none may test absent, and the 99% upper bound of the
// rate measured on never-added keys must be at most p. A second pass adds
// a further n/2 keys and removes them again, so the rate is also checked
// on a filter that has been through removals (their counters are back
// where they were unless one saturated). Race-free pass only.
func TestFPRCounting(t *testing.T) {
	if raceEnabled {
		t.Skip("statistical accuracy tests run in make test's race-free pass")
	}
	const n = 100_000
	for _, p := range []float64{0.1, 0.01, 1e-3} {
		for _, ks := range keySets {
			t.Run(fmt.Sprintf("p=%g/%s", p, ks.name), func(t *testing.T) {
				t.Parallel()
				checkCountingFPR(t, n, p, ks)
			})
		}
	}
}

func checkCountingFPR(t *testing.T, n uint64, p float64, ks keySet) {
	c := newCountingT(t, n, p)
	buf := make([]byte, 128)
	for i := range n {
		c.Add(ks.key(buf, i))
	}
	// Churn: keys far beyond the probed range come and go.
	const churnBase = 1 << 40
	for i := range n / 2 {
		c.Add(ks.key(buf, churnBase+i))
	}
	for i := range n / 2 {
		if !c.Remove(ks.key(buf, churnBase+i)) {
			t.Fatalf("Remove of churn key %d reported absent", i)
		}
	}
	for i := range n {
		if !c.Test(ks.key(buf, i)) {
			t.Fatalf("false negative: key %d %q", i, ks.key(buf, i))
		}
	}
	expected := ExpectedFPR(Classic, c.Counters(), c.K(), n)
	probes := probesFor(expected, p, 0)
	var fp uint64
	for i := n; i < n+probes; i++ {
		if c.Test(ks.key(buf, i)) {
			fp++
		}
	}
	checkRate(t, fmt.Sprintf("%.2f counters/key k=%d", float64(c.Counters())/float64(n), c.K()), fp, probes, p, "model", expected)
}
