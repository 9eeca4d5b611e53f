//go:build unix

package bloom

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"
)

// TestOpenFileReadOnly: the mapping is PROT_READ, so a write through it
// faults (here turned into a panic) and the file is unchanged.
func TestOpenFileReadOnly(t *testing.T) {
	if !littleEndian {
		t.Skip("big-endian hosts read the file instead of mapping it")
	}
	data := mustMarshal(t, filled(t, variant{Blocked, false, false}, 1000, 0.01, 0))
	path := writeFile(t, data)
	m := openFileT(t, path)
	if !m.Mapped() {
		t.Fatal("not mapped")
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	target := uintptr(unsafe.Pointer(&m.f.words[0]))
	func() {
		defer func() {
			r := recover()
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok || fault.Addr() != target {
				t.Errorf("write to the mapping: recovered %v, want a memory fault at %#x", r, target)
			}
		}()
		m.f.words[0] = 1
	}()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(data) {
		t.Error("the file changed")
	}
}

// TestOpenFilePipe: a file that cannot be mapped (a FIFO) is read.
func TestOpenFilePipe(t *testing.T) {
	orig := filled(t, variant{Classic, false, false}, 1000, 0.01, 50)
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Close()
		if _, err := orig.WriteTo(w); err != nil {
			t.Error(err)
		}
	}()
	m := openFileT(t, path)
	if m.Mapped() {
		t.Error("a FIFO was mapped")
	}
	sameFilter(t, orig, m.f, 50)
}
