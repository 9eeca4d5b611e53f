//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/redistest"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// Every command that reads a filter file reads it once, so a path that
// can be read only once works: an anonymous pipe named /dev/fd/N (what a
// shell's process substitution <(…) passes), a FIFO, and /dev/stdin fed
// by a pipe (cat f.bloom | bloomery check /dev/stdin).

// onceSource hands the bytes of a filter file to a command as a path
// that can be read only once.
type onceSource struct {
	name string
	// run runs the CLI with args, "%s" in them replaced by the path, and
	// returns its exit code and output.
	run func(t *testing.T, data []byte, args ...string) (code int, stdout, stderr string)
}

var onceSources = []onceSource{
	{"pipe", runFromPipe},
	{"fifo", runFromFIFO},
	{"stdin", runFromStdin},
}

// onceTimeout bounds a command reading a once-only path: a command that
// opens the path twice waits for ever for a writer that has gone.
const onceTimeout = 30 * time.Second

// withPath returns args with "%s" replaced by path.
func withPath(args []string, path string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "%s", path)
	}
	return out
}

// runInProcess runs the CLI in this process, and calls unblock if it has
// not returned within onceTimeout (then fails the test).
func runInProcess(t *testing.T, args []string, unblock func()) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errOut)
		done <- result{code, out.String(), errOut.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(onceTimeout):
		t.Errorf("%v: no answer after %v: it hangs", args, onceTimeout)
		unblock()
		r := <-done
		return r.code, r.stdout, r.stderr
	}
}

// runFromPipe passes data through an anonymous pipe named /dev/fd/N, as
// bash's <(cat f.bloom) does.
func runFromPipe(t *testing.T, data []byte, args ...string) (int, string, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.Write(data) // fails once the reader is closed: that is the test's to report
		w.Close()
	}()
	path := fmt.Sprintf("/dev/fd/%d", r.Fd())
	return runInProcess(t, withPath(args, path), func() { r.Close() })
}

// runFromFIFO passes data through a named pipe, written once by one
// writer.
func runFromFIFO(t *testing.T, data []byte, args ...string) (int, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "filter.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write(data)
		w.Close()
	}()
	return runInProcess(t, withPath(args, path), func() {
		// A reader waiting in open for a second writer: be one, write
		// nothing.
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
}

// cliCommand is the CLI as a process of its own: this test binary, which
// runs main instead of the tests when testMainEnv is set (TestMain).
func cliCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	return cmd
}

// runFromStdin runs the CLI as a process whose standard input is a pipe
// carrying data, the path being /dev/stdin: cat f.bloom | bloomery … /dev/stdin.
func runFromStdin(t *testing.T, data []byte, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), onceTimeout)
	defer cancel()
	cmd := cliCommand(ctx, withPath(args, "/dev/stdin")...)
	cmd.Stdin = bytes.NewReader(data) // not an *os.File: exec copies it through a pipe
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Errorf("%v: no answer after %v: it hangs", args, onceTimeout)
	case err != nil && !errors.As(err, &exit):
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// sameReport drops what info says about where the filter came from (the
// path, and whether it was mapped), so that reports of one filter read
// from different places compare equal.
func sameReport(out string) string {
	var keep []string
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.HasPrefix(line, "file ") {
			keep = append(keep, strings.Replace(line, "memory-mapped", "read into memory", 1))
		}
	}
	return strings.Join(keep, "\n")
}

// TestReadOnceCheckInfo: check and info give from a pipe, a FIFO and
// /dev/stdin what they give from the regular file, for every kind.
func TestReadOnceCheckInfo(t *testing.T) {
	files := testFilters(t)
	for _, kind := range []string{"filter", "scalable", "counting"} {
		data, err := os.ReadFile(files[kind])
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []struct {
			name string
			args []string
		}{
			{"check", []string{"check", "%s", "apple", "durian", "line\nbreak"}},
			{"check -c", []string{"check", "-c", "%s", "apple", "durian", "cherry"}},
			{"info", []string{"info", "%s"}},
		} {
			args := cmd.args
			wantCode, wantOut, wantErr := runCLI(t, withPath(args, files[kind])...)
			if wantErr != "" || wantCode != exitOK {
				t.Fatalf("%v on a regular file: exit %d: %s", args, wantCode, wantErr)
			}
			for _, src := range onceSources {
				t.Run(kind+"/"+cmd.name+"/"+src.name, func(t *testing.T) {
					code, out, stderr := src.run(t, data, args...)
					if code != wantCode || stderr != "" || sameReport(out) != sameReport(wantOut) {
						t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit %d, stdout:\n%s", code, stderr, out, wantCode, wantOut)
					}
				})
			}
		}
	}
}

// TestReadOnceErrors: a stream that is not a filter, or holds more than
// one, is refused with the reason, not misread.
func TestReadOnceErrors(t *testing.T) {
	files := testFilters(t)
	good, err := os.ReadFile(files["scalable"])
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"text", []byte(strings.Repeat("apple\n", 20)), "bad magic"},
		{"empty", nil, "reading header"},
		{"truncated", good[:len(good)-10], "unexpected EOF"},
		{"bytes after", append(append([]byte(nil), good...), "junk"...), "bytes after the filter"},
	}
	for _, tt := range tests {
		for _, src := range onceSources {
			t.Run(tt.name+"/"+src.name, func(t *testing.T) {
				code, out, stderr := src.run(t, tt.data, "check", "%s", "apple")
				if code != checkFailed || out != "" || !strings.Contains(stderr, tt.want) {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, stderr, checkFailed, tt.want)
				}
			})
		}
	}
}

// TestReadOncePush: push takes its filter from a pipe, a FIFO or
// /dev/stdin, to Redis (kind 1) and to a bloomery server (kind 2).
func TestReadOncePush(t *testing.T) {
	srv := redistest.Start(t)
	server := startBloomery(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	sc := redis.NewClient(&redis.Options{Addr: server})
	defer sc.Close()

	f := testFilter(t, 1000, 0.01, bloom.Blocked)
	s, err := bloom.NewScalable(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 { // three sub-filters
		s.AddString(fmt.Sprintf("item:%d", i))
	}
	fData, sData := encode(t, f), encode(t, s)
	for _, src := range onceSources {
		t.Run(src.name, func(t *testing.T) {
			key := "from-" + src.name
			if code, out, stderr := src.run(t, fData, "push", "%s", "redis://"+srv.Addr()+"/0/"+key); code != exitOK || out != "" || stderr != "" {
				t.Fatalf("push to Redis: exit %d, stdout %q, stderr %q", code, out, stderr)
			}
			rf, err := redisfilter.Open(ctx, rc, key)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := rf.Exists(ctx, []byte("item:999")); !ok || err != nil || rf.Sizing() != f.Sizing() {
				t.Errorf("Redis filter %v: Exists(item:999) = %v, %v", rf.Sizing(), ok, err)
			}

			if code, out, stderr := src.run(t, sData, "push", "%s", "bloomery://"+server+"/"+key); code != exitOK || out != "" || stderr != "" {
				t.Fatalf("push to the server: exit %d, stdout %q, stderr %q", code, out, stderr)
			}
			if n, err := sc.BFCard(ctx, key).Result(); uint64(n) != s.Count() || err != nil {
				t.Errorf("BF.CARD = %d, %v; want %d (items that tested absent when added)", n, err, s.Count())
			}
		})
	}
}

// encode is the encoding of w.
func encode(t *testing.T, w io.WriterTo) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCheckTruncatedUnderneath: a mapped filter file truncated while
// check runs is an error naming the file, with check's error status, not
// a crash with a stack trace.
func TestCheckTruncatedUnderneath(t *testing.T) {
	f, err := bloom.New(1_000_000, 0.01) // 1.2 MB: pages to lose
	if err != nil {
		t.Fatal(err)
	}
	f.AddString("apple")
	path := writeFilterFile(t, "shrinking.bloom", f)

	ctx, cancel := context.WithTimeout(context.Background(), onceTimeout)
	defer cancel()
	cmd := cliCommand(ctx, "check", path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// check answers each batch as it arrives: once "apple" comes back,
	// the file is mapped and in use.
	fmt.Fprintln(stdin, "apple")
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); line != "apple\n" {
		t.Fatalf("first answer %q, %v; stderr:\n%s", line, err, stderr.String())
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		fmt.Fprintf(stdin, "item-%d\n", i)
	}
	stdin.Close()
	rest, _ := out.ReadString(0)
	err = cmd.Wait()
	msg := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != checkFailed || rest != "" {
		t.Errorf("exit %d (%v), more output %q; want exit %d", code, err, rest, checkFailed)
	}
	want := "bloomery check: filter file " + path + " changed while in use (truncated?)"
	if !strings.HasPrefix(msg, want) || strings.Contains(msg, "goroutine") || strings.Count(msg, "\n") != 1 {
		t.Errorf("stderr:\n%s\nwant one line starting %q", msg, want)
	}
}
