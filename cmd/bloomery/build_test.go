package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomery/bloom"
)

// runWith runs the command line in-process with stdin as standard input.
func runWith(t *testing.T, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, stdin, &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeTemp writes content to name in a new test directory and returns
// its path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantFilter is the encoding of a filter of sizing s holding items, made
// with the library: what build must write.
func wantFilter(t *testing.T, s bloom.Sizing, items ...string) []byte {
	t.Helper()
	f, err := bloom.NewSized(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		f.AddString(it)
	}
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustSize(t *testing.T, n uint64, p float64, l bloom.Layout) bloom.Sizing {
	t.Helper()
	s, err := bloom.Size(n, p, l)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	a := writeTemp(t, "a.txt", "apple\nbanana\n\ncherry") // an empty line, no final newline
	b := writeTemp(t, "b.txt", "durian\r\napple\n")
	blocked := mustSize(t, 1000, 0.01, bloom.Blocked)
	classic := mustSize(t, 1000, 0.01, bloom.Classic)
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  []byte
	}{
		{"file to -o", []string{"-o", filepath.Join(dir, "f1.bloom"), a}, "",
			wantFilter(t, blocked, "apple", "banana", "", "cherry")},
		{"two files, CR kept", []string{"-o", filepath.Join(dir, "f2.bloom"), a, b}, "",
			wantFilter(t, blocked, "apple", "banana", "", "cherry", "durian\r", "apple")},
		{"stdin to stdout", nil, "x\ny\n", wantFilter(t, blocked, "x", "y")},
		{"dash is stdin", []string{"-o", "-", a, "-"}, "x\n",
			wantFilter(t, blocked, "apple", "banana", "", "cherry", "x")},
		{"-0", []string{"-0"}, "line one\nstill one\x00two\x00", wantFilter(t, blocked, "line one\nstill one", "two")},
		{"classic", []string{"--layout", "classic"}, "x\n", wantFilter(t, classic, "x")},
		{"empty input", nil, "", wantFilter(t, blocked)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"build", "-n", "1000", "-p", "0.01"}, tt.args...)
			code, stdout, stderr := runWith(t, strings.NewReader(tt.stdin), args...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			got := []byte(stdout)
			for i, arg := range args {
				if arg == "-o" && args[i+1] != "-" {
					if stdout != "" {
						t.Errorf("stdout = %q with -o", stdout)
					}
					var err error
					if got, err = os.ReadFile(args[i+1]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("filter differs from the library's for the same items (%d bytes, want %d)", len(got), len(tt.want))
			}
		})
	}
	// The temporary files were renamed or removed.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".bloom") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestBuildOverCapacity(t *testing.T) {
	var items strings.Builder
	for i := range 500 {
		fmt.Fprintf(&items, "item-%d\n", i)
	}
	code, _, stderr := runWith(t, strings.NewReader(items.String()), "build", "-n", "10", "-p", "0.01")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "warning: at least") || !strings.Contains(stderr, "more than -n 10") {
		t.Errorf("no capacity warning:\n%s", stderr)
	}
}

func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	in := writeTemp(t, "in.txt", "a\n")
	out := filepath.Join(dir, "out.bloom")
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-p", "0.01", in}, exitUsage, "-n/--items is required"},
		{[]string{"-n", "10", in}, exitUsage, "-p/--rate is required"},
		{[]string{"-n", "0", "-p", "0.01", in}, exitUsage, `"-n, --items"`},
		{[]string{"-n", "10", "-p", "2", in}, exitUsage, `"-p, --rate"`},
		{[]string{"-n", "10", "-p", "0.01", "--layout", "striped", in}, exitUsage, `unknown layout "striped"`},
		{[]string{"-n", "10", "-p", "0.01", "--frobnicate", in}, exitUsage, "unknown flag: --frobnicate"},
		{[]string{"-n", "1e12", "-p", "1e-9", in}, exitUsage, "more than the 16.0 GiB limit"},
		{[]string{"-n", "10", "-p", "0.01", "-o", out, filepath.Join(dir, "missing.txt")}, exitError, "missing.txt: no such file"},
		{[]string{"-n", "10", "-p", "0.01", "-o", out, dir}, exitError, "is a directory"},
		{[]string{"-n", "10", "-p", "0.01", "-o", filepath.Join(dir, "no", "such", "dir.bloom"), in}, exitError, "-o: open"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runWith(t, strings.NewReader(""), append([]string{"build"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.msg) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, tt.code, tt.msg)
			}
			if stdout != "" {
				t.Errorf("stdout = %q", stdout)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a failed build wrote -o")
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "in.txt" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// TestBuildKeepsOldOutput: a build that fails leaves an existing -o file
// as it was.
func TestBuildKeepsOldOutput(t *testing.T) {
	out := writeTemp(t, "out.bloom", "old")
	code, _, _ := runWith(t, errReader{}, "build", "-n", "10", "-p", "0.01", "-o", out)
	if code != exitError {
		t.Fatalf("exit %d, want %d", code, exitError)
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Errorf("-o file is now %q", b)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }

// TestBuildProgress: the bar is drawn on a terminal for files, and never
// for input of unknown size.
func TestBuildProgress(t *testing.T) {
	old := terminalWidth
	defer func() { terminalWidth = old }()
	terminalWidth = func(io.Writer) (int, bool) { return 100, true }

	var lines strings.Builder
	for i := range 200_000 {
		lines.WriteString(strings.Repeat("x", i%50))
		lines.WriteString("\n")
	}
	in := writeTemp(t, "in.txt", lines.String())
	out := filepath.Join(t.TempDir(), "f.bloom")

	slowClock(t)
	code, _, stderr := runWith(t, strings.NewReader(""), "build", "-n", "1000", "-p", "0.01", "-o", out, in)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"\rbuild [", "items", "/s", "ETA", "\r\x1b[K"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%q", want, stderr)
		}
	}

	code, _, stderr = runWith(t, strings.NewReader(lines.String()), "build", "-n", "1000", "-p", "0.01", "-o", out)
	if code != exitOK || strings.Contains(stderr, "ETA") {
		t.Errorf("exit %d; progress on a pipe of unknown size:\n%q", code, stderr)
	}
}

// TestHelpExamples: each command's --help shows examples that use it.
func TestHelpExamples(t *testing.T) {
	for _, name := range []string{"build", "calc", "check", "dedup", "info"} {
		code, stdout, stderr := runCLI(t, name, "--help")
		if code != exitOK || stderr != "" {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, stderr)
		}
		if !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "  bloomery "+name+" ") {
			t.Errorf("%s --help has no examples:\n%s", name, stdout)
		}
	}
}
