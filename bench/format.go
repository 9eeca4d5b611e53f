package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseCounts parses a comma list of key counts (see ParseCount).
func ParseCounts(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		n, err := ParseCount(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseCount accepts integers and exact float notation such as 1e6.
func ParseCount(s string) (uint64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || x < 1 || x != math.Trunc(x) || x > 1<<40 {
		return 0, fmt.Errorf("bad key count %q", s)
	}
	return uint64(x), nil
}

// ParseRates parses a comma list of false-positive rates in (0, 1).
func ParseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(p > 0 && p < 1) {
			return nil, fmt.Errorf("bad rate %q", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// FormatCount prints 1000000 as 1e6 and 2500000 as 2.5e6.
func FormatCount(n uint64) string {
	if n < 1000 {
		return strconv.FormatUint(n, 10)
	}
	e := int(math.Floor(math.Log10(float64(n))))
	return strconv.FormatFloat(float64(n)/math.Pow10(e), 'g', -1, 64) + "e" + strconv.Itoa(e)
}

// JoinNotes joins notes with "; ", each distinct note once, in order.
func JoinNotes(notes []string) string {
	seen := map[string]bool{}
	var out []string
	for _, x := range notes {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return strings.Join(out, "; ")
}

// FormatQuartiles prints the 25th and 75th percentiles of xs as
// "p25–p75", two decimals.
func FormatQuartiles(xs []float64) string {
	return fmt.Sprintf("%.2f–%.2f", Percentile(xs, 0.25), Percentile(xs, 0.75))
}

// FormatRatio prints the median of paired ratios rs with their quartiles
// in brackets: "0.42 [0.40–0.45]".
func FormatRatio(rs []float64) string {
	return fmt.Sprintf("%.2f [%s]", Median(rs), FormatQuartiles(rs))
}
