//go:build unix

package bloom

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
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
	target := uintptr(unsafe.Pointer(&m.f.words()[0]))
	func() {
		defer func() {
			r := recover()
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok || fault.Addr() != target {
				t.Errorf("write to the mapping: recovered %v, want a memory fault at %#x", r, target)
			}
		}()
		m.f.words()[0] = 1
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

// truncatedMapping opens a mapped filter holding items [0, 1000), then
// truncates its file to nothing underneath the mapping.
func truncatedMapping(t *testing.T) (*MappedFilter, string) {
	t.Helper()
	if !littleEndian {
		t.Skip("big-endian hosts read the file instead of mapping it")
	}
	path := writeFile(t, mustMarshal(t, filled(t, variant{Blocked, false, false}, 100_000, 0.01, 1000)))
	m := openFileT(t, path)
	if !m.Mapped() {
		t.Fatal("not mapped")
	}
	var buf [64]byte
	if err := m.Guard(func() {
		if !m.Test(itemKey(buf[:], 1)) {
			t.Error("false negative before the truncation")
		}
	}); err != nil {
		t.Fatalf("Guard on a whole file: %v", err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	return m, path
}

// TestGuardTruncated: reads of a mapping whose file was truncated fault
// (SIGBUS); inside Guard that is an error wrapping ErrFileChanged, for
// lookups and for the statistics that read the whole array, and the
// goroutine's fault mode is restored after.
func TestGuardTruncated(t *testing.T) {
	m, _ := truncatedMapping(t)
	items := make([][]byte, 100)
	for i := range items {
		items[i] = fmt.Appendf(nil, "item-%d", i)
	}
	for name, read := range map[string]func(){
		"TestMany":     func() { m.TestMany(items, nil) },
		"Test":         func() { m.TestString("item-1") },
		"FillRatio":    func() { m.FillRatio() },
		"EstimatedFPR": func() { m.EstimatedFPR() },
		"WriteTo":      func() { m.WriteTo(io.Discard) },
	} {
		reached := false
		err := m.Guard(func() {
			read()
			reached = true
		})
		if !errors.Is(err, ErrFileChanged) || reached || !strings.Contains(err.Error(), "reading byte ") {
			t.Errorf("%s on a truncated mapping: %v (went on after the read: %v), want ErrFileChanged", name, err, reached)
		}
	}
	if debug.SetPanicOnFault(false) {
		t.Error("Guard left the goroutine panicking on faults")
	}
	f := &File{Kind: KindFilter, Filter: m}
	if err := f.Guard(func() { f.TestMany(items, nil) }); !errors.Is(err, ErrFileChanged) {
		t.Errorf("File.Guard: %v", err)
	}
}

// TestGuardOtherPanics: Guard catches only faults inside its mapping:
// other panics, and faults elsewhere, go on as without it.
func TestGuardOtherPanics(t *testing.T) {
	m, _ := truncatedMapping(t)
	var nilFilter *Filter
	for name, tt := range map[string]struct {
		fn   func()
		want string
	}{
		"panic":       {func() { panic("boom") }, "boom"},
		"nil pointer": {func() { nilFilter.TestString("x") }, "nil pointer dereference"},
		"other mapping": {func() {
			other, _ := truncatedMapping(t)
			other.TestString("x")
		}, "invalid memory address"},
	} {
		func() {
			defer func() {
				if r := recover(); !strings.Contains(fmt.Sprint(r), tt.want) {
					t.Errorf("%s: recovered %v, want a panic with %q", name, r, tt.want)
				}
			}()
			err := m.Guard(tt.fn)
			t.Errorf("%s: Guard returned %v instead of panicking", name, err)
		}()
	}
	// In memory, Guard just runs fn.
	mem := &MappedFilter{f: filled(t, variant{Classic, false, false}, 100, 0.01, 0)}
	ran := false
	if err := mem.Guard(func() { ran = true }); err != nil || !ran {
		t.Errorf("Guard in memory: %v, ran %v", err, ran)
	}
}

// BenchmarkMappedGuard is the cost of Guard around one lookup and around
// an empty function: what guarding each Test would add.
func BenchmarkMappedGuard(b *testing.B) {
	path := writeFile(b, mustMarshal(b, filled(b, variant{Blocked, false, false}, 100_000, 0.01, 1000)))
	m := openFileT(b, path)
	item := []byte("item-1")
	b.Run("Test", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Test(item)
		}
	})
	b.Run("Guard+Test", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Guard(func() { m.Test(item) })
		}
	})
}
