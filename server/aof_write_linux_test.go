package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLogFileWrite: the log's raw writes append every byte, as the
// runtime's do (after a slow write), and fail with the file's name and
// the system's error.
func TestLogFileWrite(t *testing.T) {
	name := filepath.Join(t.TempDir(), "log")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	lf := newLogFile(f)
	defer lf.Close()
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i % 251)
	}
	var want []byte
	for i, b := range [][]byte{[]byte("first\r\n"), big, []byte("after a slow write\r\n")} {
		if i == 2 {
			lf.rawUntil = time.Now().Add(time.Hour) // as after a slow write: through the runtime
		}
		if n, err := lf.Write(b); n != len(b) || err != nil {
			t.Fatalf("write %d: %d of %d bytes, %v", i, n, len(b), err)
		}
		want = append(want, b...)
	}
	got, err := os.ReadFile(name)
	if err != nil || string(got) != string(want) {
		t.Fatalf("file has %d bytes (%v), want %d", len(got), err, len(want))
	}

	ro, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	bad := newLogFile(ro)
	defer bad.Close()
	_, err = bad.Write([]byte("x"))
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != name || !errors.Is(err, unix.EBADF) {
		t.Errorf("write to a read-only file: %v, want a PathError for %s with EBADF", err, name)
	}
}
