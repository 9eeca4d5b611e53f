package server

import (
	"math"
	"strconv"
	"strings"
)

// parseInt parses b as Redis's string2ll does: an optional '-', then
// digits without leading zeros (0 alone is fine, "-0" is not), no spaces
// or '+', and within int64.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	s := b
	if s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || s[0] < '1' || s[0] > '9' {
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

// parseFloat parses b as Redis's getDoubleFromObject does (the parser of
// module arguments, RedisModule_StringToDouble): C's strtod over the
// whole string, with no leading space, refusing NaN, an overflow to
// infinity and an underflow to zero ("inf" itself and subnormal results
// are numbers). strtod's forms are decimal ("1e-2", ".5", "5.", "+0.01")
// and hexadecimal ("0x1p-4", "0x0.1p0", "0x10"), and "inf", "infinity"
// and "nan" in any case.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5000 {
		return 0, false
	}
	s := string(b)
	if strings.ContainsAny(s, "_ \t\n\v\f\r") { // Go reads '_' in hex; C does not
		return 0, false
	}
	mant := strings.TrimLeft(s, "+-")
	hex := len(mant) > 2 && mant[0] == '0' && (mant[1] == 'x' || mant[1] == 'X')
	if hex && !strings.ContainsAny(mant, "pP") {
		s += "p0" // C allows a hexadecimal number without an exponent; Go does not
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false // a syntax error, or an overflow (ErrRange)
	}
	if f == 0 && nonZeroDigits(mant, hex) {
		return 0, false // an underflow, ERANGE in C
	}
	return f, true
}

// nonZeroDigits reports whether the mantissa of the number mant (without
// its sign) has a digit other than 0.
func nonZeroDigits(mant string, hex bool) bool {
	exp := "eE"
	if hex {
		mant, exp = mant[2:], "pP"
	}
	if i := strings.IndexAny(mant, exp); i >= 0 {
		mant = mant[:i]
	}
	return strings.Trim(mant, "0.") != ""
}
