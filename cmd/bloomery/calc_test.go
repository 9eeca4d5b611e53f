package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomery/bloom"
)

// cellSep separates the cells of the report table (tabwriter pads with at
// least three spaces; cells contain at most one space in a row).
var cellSep = regexp.MustCompile(`\s{2,}`)

// parseReport splits calc's table into rows keyed by their label. The
// layout row gives the column order.
func parseReport(t *testing.T, out string) (columns []string, rows map[string][]string) {
	t.Helper()
	rows = make(map[string][]string)
	for line := range strings.SplitSeq(out, "\n") {
		cells := cellSep.Split(strings.TrimSpace(line), -1)
		if len(cells) < 2 {
			continue
		}
		rows[cells[0]] = cells[1:]
	}
	columns = rows["layout"]
	if len(columns) == 0 {
		t.Fatalf("no layout row in output:\n%s", out)
	}
	return columns, rows
}

func TestCalcReport(t *testing.T) {
	tests := []struct {
		args    []string
		n       uint64
		p       float64
		layouts []bloom.Layout
	}{
		{[]string{"-n", "1000000", "-p", "0.01"}, 1e6, 0.01, []bloom.Layout{bloom.Blocked, bloom.Classic}},
		{[]string{"-n", "1e6", "-p", "1%", "--layout", "all"}, 1e6, 0.01, []bloom.Layout{bloom.Blocked, bloom.Classic}},
		{[]string{"-n", "1_000_000", "-p", "0.01", "--layout", "blocked"}, 1e6, 0.01, []bloom.Layout{bloom.Blocked}},
		{[]string{"--items=1M", "--rate=0.01", "--layout=classic"}, 1e6, 0.01, []bloom.Layout{bloom.Classic}},
		{[]string{"-n", "1", "-p", "0.5"}, 1, 0.5, []bloom.Layout{bloom.Blocked, bloom.Classic}},
		{[]string{"-n", "1000", "-p", "0.1"}, 1000, 0.1, []bloom.Layout{bloom.Blocked, bloom.Classic}},
		{[]string{"-n", "2.5e6", "-p", "1e-6"}, 2_500_000, 1e-6, []bloom.Layout{bloom.Blocked, bloom.Classic}},
		{[]string{"-n", "10k", "-p", "1e-9", "--layout", "blocked"}, 10_000, 1e-9, []bloom.Layout{bloom.Blocked}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"calc"}, tt.args...)...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
			}
			columns, rows := parseReport(t, stdout)
			if len(columns) != len(tt.layouts) {
				t.Fatalf("columns %v, want layouts %v\n%s", columns, tt.layouts, stdout)
			}
			for i, l := range tt.layouts {
				want, err := bloom.Size(tt.n, tt.p, l)
				if err != nil {
					t.Fatal(err)
				}
				if columns[i] != l.String() {
					t.Errorf("column %d is %q, want %q", i, columns[i], l)
				}
				cell := func(label string) string {
					t.Helper()
					if len(rows[label]) != len(columns) {
						t.Fatalf("row %q = %q, want %d cells\n%s", label, rows[label], len(columns), stdout)
					}
					return rows[label][i]
				}
				if got, want := cell("bits"), strconv.FormatUint(want.Bits, 10); got != want {
					t.Errorf("%s bits = %s, want %s", l, got, want)
				}
				if got, want := cell("bytes"), fmt.Sprintf("%d (%s)", want.Bytes(), humanBytes(want.Bytes())); got != want {
					t.Errorf("%s bytes = %s, want %s", l, got, want)
				}
				if got, want := cell("k (hashes per item)"), strconv.FormatUint(uint64(want.K), 10); got != want {
					t.Errorf("%s k = %s, want %s", l, got, want)
				}
				if got, want := cell("bits per key"), fmt.Sprintf("%.2f", want.BitsPerKey()); got != want {
					t.Errorf("%s bits per key = %s, want %s", l, got, want)
				}

				// Expected rate at 1x, 1.5x, 2x and 4x the items: at most p at
				// 1x, then increasing with the item count.
				prev, prevItems := -1.0, uint64(0)
				for _, load := range fprLoads {
					items := scaleCount(tt.n, load.num, load.den)
					label := fmt.Sprintf("FPR at %s n (%d items)", load.label, items)
					s := cell(label)
					got, err := strconv.ParseFloat(s, 64)
					if err != nil {
						t.Fatalf("%s %s: %v", l, label, err)
					}
					if s != formatRate(want.FPRAt(items)) {
						t.Errorf("%s %s = %s, want %s", l, label, s, formatRate(want.FPRAt(items)))
					}
					if load.num == load.den && got > tt.p {
						t.Errorf("%s %s = %g > p = %g", l, label, got, tt.p)
					}
					if !(got > prev) && !(items == prevItems && got == prev) {
						t.Errorf("%s %s = %g, not above the rate at the previous load (%g)", l, label, got, prev)
					}
					prev, prevItems = got, items
				}
			}
			hasNote := strings.Contains(stdout, "blocked uses ")
			if want := len(tt.layouts) == 2; hasNote != want {
				t.Errorf("comparison note present = %v, want %v\n%s", hasNote, want, stdout)
			}
			if strings.Contains(stdout, "WithMaxBytes") {
				t.Errorf("unexpected size-limit note for a small filter:\n%s", stdout)
			}
		})
	}
}

// TestCalcKnownValues pins values that are properties of Bloom filters
// rather than details of the sizing model.
func TestCalcKnownValues(t *testing.T) {
	tests := []struct {
		layout         string
		p              float64
		k              string
		bitsPerKey     float64 // expected, within bitsPerKeySlop
		bitsPerKeySlop float64
	}{
		{"classic", 0.01, "7", 9.59, 0.15}, // optimum 9.585 bits/key plus a small margin
		{"blocked", 0.01, "7", 10.13, 0.1},
	}
	for _, tt := range tests {
		t.Run(tt.layout, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "calc", "-n", "1e6", "-p", fmt.Sprint(tt.p), "--layout", tt.layout)
			if code != exitOK {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
			}
			_, rows := parseReport(t, stdout)
			if got := rows["k (hashes per item)"]; len(got) != 1 || got[0] != tt.k {
				t.Errorf("k = %q, want %s\n%s", got, tt.k, stdout)
			}
			got, err := strconv.ParseFloat(rows["bits per key"][0], 64)
			if err != nil || math.Abs(got-tt.bitsPerKey) > tt.bitsPerKeySlop {
				t.Errorf("bits per key = %v (%v), want about %v\n%s", got, err, tt.bitsPerKey, stdout)
			}
		})
	}
}

func TestCalcNotes(t *testing.T) {
	// Memory comparison: blocked needs a little more than classic at 1%.
	_, stdout, _ := runCLI(t, "calc", "-n", "1e6", "-p", "0.01")
	b, _ := bloom.Size(1e6, 0.01, bloom.Blocked)
	c, _ := bloom.Size(1e6, 0.01, bloom.Classic)
	want := fmt.Sprintf("blocked uses %+.1f%% memory vs classic", (float64(b.Bits)/float64(c.Bits)-1)*100)
	if !strings.Contains(stdout, want) {
		t.Errorf("output lacks %q:\n%s", want, stdout)
	}

	// Above DefaultMaxBytes the size is still printed, with a note.
	code, stdout, stderr := runCLI(t, "calc", "-n", "1e11", "-p", "0.01", "--layout", "classic")
	if code != exitOK {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	big, err := bloom.Size(1e11, 0.01, bloom.Classic)
	if err != nil {
		t.Fatal(err)
	}
	if big.Bytes() <= bloom.DefaultMaxBytes {
		t.Fatalf("test filter is only %d bytes; pick a larger n", big.Bytes())
	}
	for _, want := range []string{
		strconv.FormatUint(big.Bits, 10),
		"exceeds the default in-memory limit",
		"WithMaxBytes",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestCalcBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		flag string // the error must name this flag
		msg  string // and contain this
	}{
		{[]string{"-n", "0", "-p", "0.01"}, "--items", "at least 1"},
		{[]string{"-n", "-5", "-p", "0.01"}, "--items", "at least 1"},
		{[]string{"-n=-5", "-p", "0.01"}, "--items", "at least 1"},
		{[]string{"-n", "abc", "-p", "0.01"}, "--items", "not a count"},
		{[]string{"-n", "1.5", "-p", "0.01"}, "--items", "whole number"},
		{[]string{"-n", "1e30", "-p", "0.01"}, "--items", "too large"},
		{[]string{"-n", "", "-p", "0.01"}, "--items", "not a count"},
		{[]string{"-p", "0.01"}, "--items", "required"},
		{[]string{"-n", "1e6", "-p", "0"}, "--rate", "between 0 and 1"},
		{[]string{"-n", "1e6", "-p", "1"}, "--rate", "between 0 and 1"},
		{[]string{"-n", "1e6", "-p", "nan"}, "--rate", "between 0 and 1"},
		{[]string{"-n", "1e6", "-p", "-0.5"}, "--rate", "between 0 and 1"},
		{[]string{"-n", "1e6", "-p", "x"}, "--rate", "not a number"},
		{[]string{"-n", "1e6"}, "--rate", "required"},
		{[]string{"-n", "1e6", "-p", "0.01", "--layout", "both"}, "--layout", `unknown layout "both"`},
		{[]string{"-n", "1e6", "-p", "0.01", "--layout="}, "--layout", "unknown layout"},
		{[]string{"-n"}, "n", "needs an argument"},
		{[]string{"-n", "1e6", "-p", "0.01", "--bits", "8"}, "--bits", "unknown flag"},
		{[]string{"-n", "1e6", "-p", "0.01", "extra"}, "calc", `unexpected argument "extra"`},
		// Valid flags, but no filter of 2^64 bits or fewer reaches p.
		{[]string{"-n", "1e18", "-p", "1e-100", "--layout", "blocked"}, "-p", "no blocked filter"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"calc"}, tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d", code, exitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want empty", stdout)
			}
			if !strings.HasPrefix(stderr, "bloomery calc: ") {
				t.Errorf("stderr does not start with the command path:\n%s", stderr)
			}
			if !strings.Contains(stderr, tt.flag) || !strings.Contains(stderr, tt.msg) {
				t.Errorf("stderr does not name %q with %q:\n%s", tt.flag, tt.msg, stderr)
			}
			if !strings.Contains(stderr, "bloomery calc --help") {
				t.Errorf("stderr does not point to --help:\n%s", stderr)
			}
		})
	}
}

func TestCalcHelp(t *testing.T) {
	for _, args := range [][]string{{"calc", "--help"}, {"calc", "-h"}, {"help", "calc"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitOK || stderr != "" {
			t.Errorf("%q: exit code %d, stderr %q", args, code, stderr)
		}
		for _, want := range []string{"Examples:", "bloomery calc -n 1e6 -p 0.01", "--layout", "-n, --items", "-p, --rate"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%q: help lacks %q:\n%s", args, want, stdout)
			}
		}
	}
}

func TestScaleCount(t *testing.T) {
	tests := []struct {
		n, num, den, want uint64
	}{
		{1_000_000, 3, 2, 1_500_000},
		{1, 3, 2, 1},
		{7, 4, 1, 28},
		{math.MaxUint64, 1, 1, math.MaxUint64},
		{math.MaxUint64 / 2, 2, 1, math.MaxUint64 - 1},
		{math.MaxUint64/2 + 1, 2, 1, math.MaxUint64}, // saturates
		{math.MaxUint64, 3, 2, math.MaxUint64},
	}
	for _, tt := range tests {
		if got := scaleCount(tt.n, tt.num, tt.den); got != tt.want {
			t.Errorf("scaleCount(%d, %d, %d) = %d, want %d", tt.n, tt.num, tt.den, got, tt.want)
		}
	}
}
