package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomery/bloom"
)

func TestDedup(t *testing.T) {
	a := writeTemp(t, "a.txt", "x\ny\nx\n")
	tests := []struct {
		name  string
		args  []string
		stdin string
		out   string
	}{
		{"stdin", nil, "b\na\nb\nc\na\n", "b\na\nc\n"},
		{"no final newline", nil, "a\nb\na", "a\nb\n"},
		{"empty lines", nil, "\na\n\n", "\na\n"},
		{"files and stdin", []string{a, "-", a}, "y\nz\n", "x\ny\nz\n"},
		{"-0", []string{"-0"}, "a\nb\x00c\x00a\nb\x00", "a\nb\x00c\x00"},
		{"empty", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runWith(t, strings.NewReader(tt.stdin), append([]string{"dedup"}, tt.args...)...)
			if code != exitOK || stdout != tt.out || stderr != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, tt.out)
			}
		})
	}
}

// TestDedupMany: 100k lines, each but the first followed by a repeat of
// an earlier one, with a filter that has to grow many times: every line
// printed once, in order.
func TestDedupMany(t *testing.T) {
	var in, want strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&in, "line %d\nline %d\n", i, i/2)
		fmt.Fprintf(&want, "line %d\n", i)
	}
	code, out, stderr := runWith(t, strings.NewReader(in.String()), "dedup", "-n", "1000", "-p", "1e-9")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if out != want.String() {
		t.Errorf("output differs: %d bytes, want %d", len(out), want.Len())
	}
}

func TestDedupState(t *testing.T) {
	state := filepath.Join(t.TempDir(), "seen.bloom")
	code, out, stderr := runWith(t, strings.NewReader("a\nb\na\n"), "dedup", "--state", state, "-n", "100", "-p", "0.001")
	if code != exitOK || out != "a\nb\n" {
		t.Fatalf("first run: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	f, err := os.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	s, err := bloom.LoadScalable(f)
	f.Close()
	if err != nil {
		t.Fatalf("state: %v", err)
	}
	if s.Count() != 2 || s.TargetFPR() != 0.001 {
		t.Errorf("state holds %d items at p = %g, want 2 at 0.001", s.Count(), s.TargetFPR())
	}

	// The second run prints only what the first did not; -n and -p with
	// the state's own values are fine.
	code, out, stderr = runWith(t, strings.NewReader("b\nc\na\nd\nc\n"), "dedup", "--state", state, "-p", "0.001", "-n", "100")
	if code != exitOK || out != "c\nd\n" {
		t.Fatalf("second run: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, _ = runWith(t, strings.NewReader("a\nb\nc\nd\ne\n"), "dedup", "--state", state)
	if code != exitOK || out != "e\n" {
		t.Fatalf("third run: exit %d, stdout %q", code, out)
	}
	entries, _ := os.ReadDir(filepath.Dir(state))
	if len(entries) != 1 {
		t.Errorf("state directory holds %d files, want only the state", len(entries))
	}
}

func TestDedupErrors(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "seen.bloom")
	if code, _, stderr := runWith(t, strings.NewReader("a\n"), "dedup", "--state", state, "-n", "100"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	before, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	filter := writeFilterFile(t, "f.bloom", newClassic(t))
	tests := []struct {
		name  string
		args  []string
		stdin *strings.Reader
		code  int
		msg   string
	}{
		{"other -n", []string{"--state", state, "-n", "200"}, nil, exitUsage, "-n/--items 200 differs from the initial capacity 100"},
		{"other -p", []string{"--state", state, "-p", "0.1"}, nil, exitUsage, "-p/--rate 0.1 differs from the rate 1e-06"},
		{"bad -p", []string{"-p", "1.5"}, nil, exitUsage, `"-p, --rate"`},
		{"bad -n", []string{"-n", "x"}, nil, exitUsage, `"-n, --items"`},
		{"missing input", []string{"--state", state, filepath.Join(dir, "nope.txt")}, nil, exitError, "nope.txt: no such file"},
		{"state of another kind", []string{"--state", filter}, nil, exitError, "a Filter"},
		{"corrupt state", []string{"--state", corrupt(t, writeTemp(t, "s.bloom", string(before)))}, nil, exitError, "CRC"},
		{"state dir missing", []string{"--state", filepath.Join(dir, "no", "s.bloom")}, nil, exitError, "--state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runWith(t, strings.NewReader("b\n"), append([]string{"dedup"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.msg) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", code, stdout, stderr, tt.code, tt.msg)
			}
		})
	}

	// A run whose input fails midway leaves the state as it was.
	if code, _, _ := runWith(t, errReader{}, "dedup", "--state", state); code != exitError {
		t.Errorf("failing input: exit %d", code)
	}
	if after, _ := os.ReadFile(state); string(after) != string(before) {
		t.Error("a failed run changed the state file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the state directory, want 1", len(entries))
	}
}
