package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomery/bloom"
)

// infoRows splits info's report into its label → value rows (the first
// table only) and the rest.
func infoRows(t *testing.T, out string) (rows map[string]string, rest string) {
	t.Helper()
	rows = make(map[string]string)
	table, rest, _ := strings.Cut(out, "\n\n")
	for line := range strings.SplitSeq(strings.TrimSuffix(table, "\n"), "\n") {
		cells := cellSep.Split(strings.TrimSpace(line), 2)
		if len(cells) != 2 {
			t.Fatalf("row %q is not label and value:\n%s", line, out)
		}
		rows[cells[0]] = cells[1]
	}
	return rows, rest
}

func checkRows(t *testing.T, out string, rows map[string]string, want map[string]string) {
	t.Helper()
	for label, value := range want {
		if got, ok := rows[label]; !ok || !strings.HasPrefix(got, value) {
			t.Errorf("%s = %q, want %q…\n%s", label, got, value, out)
		}
	}
}

func TestInfoFilter(t *testing.T) {
	f, err := bloom.New(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		f.Add(fmt.Appendf(nil, "item-%d", i))
	}
	path := writeFilterFile(t, "half.bloom", f)
	code, out, stderr := runCLI(t, "info", path)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, rest := infoRows(t, out)
	checkRows(t, out, rows, map[string]string{
		"file":                path + fmt.Sprintf(" (%d bytes", f.EncodedSize()),
		"kind":                "filter (kind 1), memory-mapped",
		"layout":              "blocked",
		"hash":                "xxh3",
		"capacity (n)":        "1000 items",
		"target rate (p)":     "1.00e-02",
		"k (hashes per item)": fmt.Sprint(f.K()),
		"bits (m)":            fmt.Sprint(f.Bits()),
		"items added":         fmt.Sprint(f.Inserted()),
		"bits set":            fmt.Sprintf("%.2f%%", 100*f.FillRatio()),
		"estimated items":     fmt.Sprint(f.Count()),
		"estimated rate now":  formatRate(f.EstimatedFPR()),
	})
	if rest != "" {
		t.Errorf("notes for a half-full filter:\n%s", rest)
	}

	// Past capacity: a warning with the rate now.
	for i := 500; i < 3000; i++ {
		f.Add(fmt.Appendf(nil, "item-%d", i))
	}
	code, out, _ = runCLI(t, "info", writeFilterFile(t, "full.bloom", f))
	if code != exitOK || !strings.Contains(out, "warning: past capacity") ||
		!strings.Contains(out, "for a target of 1.00e-02") {
		t.Errorf("exit %d, no capacity warning:\n%s", code, out)
	}
}

func TestInfoScalable(t *testing.T) {
	s, err := bloom.NewScalable(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 350 { // three sub-filters: 100 + 200 + 50 of 400
		if _, err := s.Add(fmt.Appendf(nil, "item-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr := runCLI(t, "info", writeFilterFile(t, "s.bloom", s))
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, rest := infoRows(t, out)
	info := s.Info()
	checkRows(t, out, rows, map[string]string{
		"kind":               "scalable filter (kind 2)",
		"initial capacity":   "100 items",
		"target rate (p)":    "1.00e-02",
		"growth":             "capacity ×2 per sub-filter; rate split: first share 0.9, tightening 0.5",
		"sub-filters":        fmt.Sprint(info.Filters),
		"capacity":           fmt.Sprint(info.Capacity),
		"items added":        fmt.Sprint(info.Items),
		"estimated rate now": formatRate(s.EstimatedFPR()),
	})
	subs := strings.Split(strings.TrimSpace(rest), "\n")
	if len(subs) != 1+info.Filters || !strings.HasPrefix(subs[0], "sub-filter") {
		t.Fatalf("sub-filter table:\n%s", rest)
	}
	// Sub-filter 0 (100 items at 0.009) is classic: 128 bytes, not 3 blocks.
	if cells := cellSep.Split(subs[1], -1); len(cells) != 9 || cells[0] != "0" || cells[1] != "100" || cells[5] != "100" || cells[8] != "classic" {
		t.Errorf("sub-filter 0 row %q, want capacity 100, 100 items, classic", cells)
	}
	if cells := cellSep.Split(subs[3], -1); len(cells) != 9 || cells[8] != "blocked" {
		t.Errorf("sub-filter 2 row %q, want blocked", cells)
	}
	if !strings.Contains(out, "blocked (sub-filters of at most 512 bytes classic") {
		t.Errorf("no layout rule in:\n%s", out)
	}
	if strings.Contains(out, "warning") {
		t.Errorf("a warning for a scalable filter that grew:\n%s", out)
	}

	// A full non-scaling filter says so.
	full, err := bloom.NewScalable(10, 0.01, bloom.WithNonScaling())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; full.Count() < 10; i++ {
		full.Add(fmt.Appendf(nil, "item-%d", i))
	}
	_, out, _ = runCLI(t, "info", writeFilterFile(t, "full.bloom", full))
	if !strings.Contains(out, "growth") || !strings.Contains(out, "non-scaling") || !strings.Contains(out, "warning: the filter is full") {
		t.Errorf("full non-scaling filter:\n%s", out)
	}
}

func TestInfoCounting(t *testing.T) {
	c, err := bloom.NewCounting(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 { // saturates apple's counters
		c.AddString("apple")
	}
	c.AddString("banana")
	code, out, stderr := runCLI(t, "info", writeFilterFile(t, "c.bloom", c))
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, rest := infoRows(t, out)
	checkRows(t, out, rows, map[string]string{
		"kind":               "counting filter (kind 3)",
		"layout":             "classic",
		"capacity (n)":       "100 items",
		"counters":           fmt.Sprint(c.Counters()),
		"items":              "21 (adds less removes)",
		"saturated counters": fmt.Sprint(c.K()),
		"counters in use":    fmt.Sprint(2 * c.K()),
	})
	if !strings.Contains(rest, "counters are saturated") {
		t.Errorf("no note on saturated counters:\n%s", out)
	}
}

func TestInfoErrors(t *testing.T) {
	files := testFilters(t)
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{nil, exitUsage, "want one FILTER argument, got 0"},
		{[]string{files["filter"], files["filter"]}, exitUsage, "want one FILTER argument, got 2"},
		{[]string{"--frobnicate", files["filter"]}, exitUsage, "unknown flag"},
		{[]string{filepath.Join(t.TempDir(), "nope.bloom")}, exitError, "nope.bloom: no such file"},
		{[]string{files["corrupted"]}, exitError, "payload CRC"},
		{[]string{truncate(t, files["counting"], 1)}, exitError, "truncated"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"info"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.msg) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", code, stdout, stderr, tt.code, tt.msg)
			}
		})
	}
	if code, out, _ := runCLI(t, "info", "--skip-crc", files["corrupted"]); code != exitOK || !strings.Contains(out, "kind") {
		t.Errorf("--skip-crc: exit %d:\n%s", code, out)
	}
}
