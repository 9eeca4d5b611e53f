package main

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/bloomery/bloom"
)

// Flag values shared by the subcommands. Each implements pflag.Value and
// validates in Set, so a bad value is reported while flags are parsed, as
// `invalid argument "x" for "-n, --items" flag: ...`, and run exits with
// exitUsage.

// countValue is an item count of at least 1, such as -n.
type countValue uint64

func (v *countValue) String() string { return strconv.FormatUint(uint64(*v), 10) }
func (v *countValue) Type() string   { return "count" }
func (v *countValue) Set(s string) error {
	n, err := parseCount(s)
	if err != nil {
		return err
	}
	*v = countValue(n)
	return nil
}

// countRE matches a decimal number with optional digit-group underscores,
// fraction, exponent and SI suffix: 1000000, 1_000_000, 1e6, 2.5e6, 10M.
var countRE = regexp.MustCompile(`^([0-9]+(?:_[0-9]+)*)(?:\.([0-9]+(?:_[0-9]+)*))?(?:[eE]([+-]?[0-9]+))?([kKMGT]?)$`)

// siExp is the power of ten of each count suffix.
var siExp = map[string]int{"": 0, "k": 3, "K": 3, "M": 6, "G": 9, "T": 12}

// parseCount parses a count of at least 1 that fits in a uint64. It takes
// integers (1000000, 1_000_000), scientific notation (1e6, 2.5e6) and the
// decimal suffixes k, M, G and T (10M, 1.5k), as long as the value is a
// whole number.
func parseCount(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		return 0, errors.New("must be at least 1")
	}
	t = strings.TrimPrefix(t, "+")
	m := countRE.FindStringSubmatch(t)
	if m == nil {
		return 0, errors.New("not a count (want e.g. 1000000, 1_000_000, 1e6 or 10M)")
	}
	intPart := strings.ReplaceAll(m[1], "_", "")
	frac := strings.ReplaceAll(m[2], "_", "")
	exp := 0
	if m[3] != "" {
		e, err := strconv.Atoi(m[3])
		if err != nil || e > 1000 || e < -1000 {
			return 0, errors.New("exponent out of range")
		}
		exp = e
	}
	// The value is digits × 10^exp with digits = intPart frac.
	exp += siExp[m[4]] - len(frac)
	digits, _ := new(big.Int).SetString(intPart+frac, 10)
	if digits.Sign() == 0 {
		return 0, errors.New("must be at least 1")
	}
	const maxDigits = 20 // math.MaxUint64 has 20 decimal digits
	ten := big.NewInt(10)
	switch {
	case exp > maxDigits:
		return 0, fmt.Errorf("too large (at most %d)", uint64(math.MaxUint64))
	case exp > 0:
		digits.Mul(digits, new(big.Int).Exp(ten, big.NewInt(int64(exp)), nil))
	case exp < 0:
		if -exp > len(intPart)+len(frac) { // digits < 10^-exp
			return 0, errors.New("not a whole number")
		}
		var rem big.Int
		digits.QuoRem(digits, new(big.Int).Exp(ten, big.NewInt(int64(-exp)), nil), &rem)
		if rem.Sign() != 0 {
			return 0, errors.New("not a whole number")
		}
		if digits.Sign() == 0 {
			return 0, errors.New("must be at least 1")
		}
	}
	if !digits.IsUint64() {
		return 0, fmt.Errorf("too large (at most %d)", uint64(math.MaxUint64))
	}
	return digits.Uint64(), nil
}

// rateValue is a false-positive rate in (0, 1), such as -p.
type rateValue float64

func (v *rateValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }
func (v *rateValue) Type() string   { return "rate" }
func (v *rateValue) Set(s string) error {
	p, err := parseRate(s)
	if err != nil {
		return err
	}
	*v = rateValue(p)
	return nil
}

// parseRate parses a probability strictly between 0 and 1, written as a
// number (0.01, 1e-3) or a percentage (1%).
func parseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if rest, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(rest), 100
	}
	p, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, errors.New("not a number (want e.g. 0.01, 1e-3 or 1%)")
	}
	p /= scale
	if !(p > 0 && p < 1) { // also rejects NaN
		return 0, errors.New("must be between 0 and 1, exclusive")
	}
	return p, nil
}

// layoutsValue selects one filter layout or all of them.
type layoutsValue struct {
	name    string
	layouts []bloom.Layout
}

func newLayoutsValue() *layoutsValue {
	return &layoutsValue{name: "all", layouts: []bloom.Layout{bloom.Blocked, bloom.Classic}}
}

func (v *layoutsValue) String() string { return v.name }
func (v *layoutsValue) Type() string   { return "layout" }
func (v *layoutsValue) Set(s string) error {
	name := strings.ToLower(strings.TrimSpace(s))
	if name == "all" {
		*v = *newLayoutsValue()
		return nil
	}
	l, err := bloom.ParseLayout(name)
	if err != nil {
		return fmt.Errorf("unknown layout %q (want blocked, classic or all)", s)
	}
	v.name, v.layouts = name, []bloom.Layout{l}
	return nil
}
