package prefetch

import (
	"testing"
	"unsafe"
)

// Line is a hint: on any address, nil included, it
// neither faults nor changes memory.
func TestLineChangesNothing(t *testing.T) {
	b := []byte("unchanged")
	Line(unsafe.Pointer(&b[0]))
	Line(nil)
	if string(b) != "unchanged" {
		t.Fatalf("memory changed: %q", b)
	}
}

func BenchmarkLine(b *testing.B) {
	b.ReportAllocs()
	x := make([]byte, 64)
	for b.Loop() {
		Line(unsafe.Pointer(&x[0]))
	}
}
