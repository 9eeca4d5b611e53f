package server

import (
	"math"
	"strconv"
)

// parseInt parses b as Redis's string2ll does: an optional '-', then
// digits without leading zeros (0 alone is fine), no spaces or '+', and
// within int64.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	s := b
	if s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// parseFloat parses b as Redis's string2ld does: the whole string must be
// a number (no spaces), and NaN is refused.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5000 || b[0] == ' ' || b[len(b)-1] == ' ' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
