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

// fruits are the items of the test filters; they test present in every
// filter, and "durian" and the others absent in all (checked below).
var fruits = []string{"apple", "banana", "cherry", "line\nbreak"}

// writeFilterFile writes the encoding of w to a new file named name and
// returns its path.
func writeFilterFile(t testing.TB, name string, w io.WriterTo) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// testFilters writes a filter of each kind holding fruits and returns
// their paths by kind name.
func testFilters(t testing.TB) map[string]string {
	t.Helper()
	f, err := bloom.New(1000, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	s, err := bloom.NewScalable(2, 1e-6) // grows: 4 items, capacity 2
	if err != nil {
		t.Fatal(err)
	}
	c, err := bloom.NewCounting(1000, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range fruits {
		f.AddString(it)
		if _, err := s.AddString(it); err != nil {
			t.Fatal(err)
		}
		c.AddString(it)
	}
	return map[string]string{
		"filter":    writeFilterFile(t, "f.bloom", f),
		"scalable":  writeFilterFile(t, "s.bloom", s),
		"counting":  writeFilterFile(t, "c.bloom", c),
		"classic":   writeFilterFile(t, "classic.bloom", newClassic(t)),
		"corrupted": corrupt(t, writeFilterFile(t, "bad.bloom", f)),
	}
}

func newClassic(t testing.TB) *bloom.Filter {
	f, err := bloom.New(1000, 1e-6, bloom.WithLayout(bloom.Classic))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range fruits {
		f.AddString(it)
	}
	return f
}

// corrupt flips a bit of the payload of the file at path.
func corrupt(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[64+5] ^= 4
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheck(t *testing.T) {
	files := testFilters(t)
	for _, kind := range []string{"filter", "scalable", "counting", "classic"} {
		path := files[kind]
		tests := []struct {
			name  string
			args  []string
			stdin string
			code  int
			out   string
		}{
			{"args", []string{path, "apple", "durian", "cherry"}, "", exitOK, "apple\ncherry\n"},
			{"args -v", []string{"-v", path, "apple", "durian", "cherry"}, "", exitOK, "durian\n"},
			{"args none", []string{path, "durian", "elderberry"}, "", checkNoneSelected, ""},
			{"args -v none", []string{"-v", path, "apple"}, "", checkNoneSelected, ""},
			{"stdin", []string{path}, "durian\nbanana\napple\nfig", exitOK, "banana\napple\n"},
			{"stdin -v", []string{"-v", path}, "durian\nbanana\napple\nfig", exitOK, "durian\nfig\n"},
			{"stdin none", []string{path}, "durian\n", checkNoneSelected, ""},
			{"empty stdin", []string{path}, "", checkNoneSelected, ""},
			{"-0", []string{"-0", path}, "line\nbreak\x00line\x00apple", exitOK, "line\nbreak\x00apple\x00"},
			{"-c", []string{"-c", path}, "apple\ndurian\nbanana\n", exitOK, "2\n"},
			{"-c none", []string{"-c", path, "durian"}, "", checkNoneSelected, "0\n"},
			{"-v -c", []string{"-v", "-c", path}, "apple\ndurian\nbanana\n", exitOK, "1\n"},
			{"-q", []string{"-q", path, "durian", "apple"}, "", exitOK, ""},
			{"-q none", []string{"-q", path}, "durian\n", checkNoneSelected, ""},
			{"after --", []string{path, "--", "-v", "apple"}, "", exitOK, "apple\n"},
			{"skip-crc", []string{"--skip-crc", path, "apple"}, "", exitOK, "apple\n"},
		}
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				code, stdout, stderr := runWith(t, strings.NewReader(tt.stdin), append([]string{"check"}, tt.args...)...)
				if code != tt.code || stdout != tt.out || stderr != "" {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q", code, stdout, stderr, tt.code, tt.out)
				}
			})
		}
	}
}

func TestCheckErrors(t *testing.T) {
	files := testFilters(t)
	good, err := os.ReadFile(files["filter"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyed, err := bloom.New(10, 0.01, bloom.WithKey([16]byte{1}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no filter", nil, exitUsage, "missing FILTER argument"},
		{"bad flag", []string{"--frobnicate", files["filter"]}, exitUsage, "unknown flag: --frobnicate"},
		{"-q and -c", []string{"-q", "-c", files["filter"], "a"}, exitUsage, "-q/--quiet and -c/--count"},
		{"missing file", []string{filepath.Join(dir, "nope.bloom"), "a"}, checkFailed, "nope.bloom: no such file"},
		{"directory", []string{dir, "a"}, checkFailed, dir},
		{"not a filter", []string{writeTemp(t, "words.txt", strings.Repeat("apple\nbanana\n", 10)), "a"}, checkFailed, "bad magic"},
		{"empty file", []string{writeTemp(t, "empty.bloom", ""), "a"}, checkFailed, "reading header"},
		{"truncated", []string{writeTemp(t, "short.bloom", string(good[:len(good)-100])), "a"}, checkFailed, "truncated"},
		{"truncated header", []string{writeTemp(t, "short2.bloom", string(good[:30])), "a"}, checkFailed, "reading header"},
		{"corrupt CRC", []string{files["corrupted"], "a"}, checkFailed, "payload CRC"},
		{"truncated scalable", []string{truncate(t, files["scalable"], 200), "a"}, checkFailed, "s.bloom"},
		{"corrupt counting", []string{corrupt(t, files["counting"]), "a"}, checkFailed, "payload CRC"},
		{"keyed", []string{writeFilterFile(t, "keyed.bloom", keyed), "a"}, checkFailed, "keyed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runWith(t, strings.NewReader(""), append([]string{"check"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.msg) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", code, stdout, stderr, tt.code, tt.msg)
			}
		})
	}

	// --skip-crc opens the corrupt file (and answers from its bits).
	if code, _, stderr := runCLI(t, "check", "--skip-crc", files["corrupted"], "apple"); code == checkFailed {
		t.Errorf("--skip-crc: exit %d: %s", code, stderr)
	}
	// An input error after the filter opened is status 2 too.
	code, _, stderr := runWith(t, errReader{}, "check", files["filter"])
	if code != checkFailed || !strings.Contains(stderr, "reading standard input") {
		t.Errorf("failing stdin: exit %d, stderr %q", code, stderr)
	}
	// So is an output error.
	var errOut bytes.Buffer
	if code := run([]string{"check", files["filter"], "apple"}, strings.NewReader(""), failWriter{}, &errOut); code != checkFailed {
		t.Errorf("failing stdout: exit %d, stderr %q", code, errOut.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// truncate writes a copy of the file at path without its last n bytes.
func truncate(t testing.TB, path string, n int) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(out, b[:len(b)-n], 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBuildCheckPipeline: build's output piped into a file, then check
// against it, as in a shell pipeline, on many items.
func TestBuildCheckPipeline(t *testing.T) {
	var in, probe strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&in, "user-%d@example.com\n", i)
		fmt.Fprintf(&probe, "user-%d@example.com\n", i+10_000)
	}
	code, filter, stderr := runWith(t, strings.NewReader(in.String()), "build", "-n", "20000", "-p", "1e-4")
	if code != exitOK {
		t.Fatalf("build: exit %d: %s", code, stderr)
	}
	path := writeTemp(t, "users.bloom", filter)
	code, out, stderr := runWith(t, strings.NewReader(probe.String()), "check", path)
	if code != exitOK {
		t.Fatalf("check: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// users 10000…19999 are present; of the 10000 absent ones, about 1
	// is a false positive (1e-4).
	if len(lines) < 10_000 || len(lines) > 10_010 || lines[0] != "user-10000@example.com" {
		t.Errorf("%d lines, first %q", len(lines), lines[0])
	}
}

// BenchmarkCheck runs check over 1M lines against a mapped 10M-item
// filter (12 MiB), as from a file: half the lines are present.
func BenchmarkCheck(b *testing.B) {
	f, err := bloom.New(10_000_000, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	var in bytes.Buffer
	for i := range 1_000_000 {
		if i%2 == 0 {
			f.Add(fmt.Appendf(nil, "user-%d@example.com", i))
		}
		fmt.Fprintf(&in, "user-%d@example.com\n", i)
	}
	path := writeFilterFile(b, "users.bloom", f)
	data := in.Bytes()
	r := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(data)
		if code := run([]string{"check", path}, r, io.Discard, io.Discard); code != exitOK {
			b.Fatalf("exit %d", code)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ns/line")
}
