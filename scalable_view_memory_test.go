//go:build unix

package bloom

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
)

// heapObjectBytes is the bytes of live and unswept heap objects after a
// collection.
func heapObjectBytes() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// The pages a view keeps are outside Go's heap (internal/cow): a view
// that keeps a whole filter's pages grows the heap by far less than
// they are, and still encodes the instant (docs/DESIGN.md §8, step 5).
func TestScalableViewKeepsPagesOffTheHeap(t *testing.T) {
	s := viewFilter(t, 10_000_000, 0) // about 12 MB: 3,000 pages
	want := encodeView(t, s.View())
	bits := s.Bytes()

	v := s.View()
	before := heapObjectBytes()
	for i := range 200_000 { // ~65 adds a page: nearly every page changes
		s.Add(fmt.Appendf(nil, "after-%d", i))
	}
	s.mu.Lock()
	kept := uint64(v.pages.Kept()) * ViewPage
	s.mu.Unlock()
	grown := heapObjectBytes() - min(before, heapObjectBytes())
	if kept < bits/2 {
		t.Fatalf("%d bytes of pages kept for a filter of %d bytes changed nearly everywhere", kept, bits)
	}
	if grown > kept/8 {
		t.Fatalf("the heap grew by %d bytes while the view kept %d bytes of pages: they are on the heap", grown, kept)
	}
	if got := encodeView(t, v); string(got) != string(want) {
		t.Fatal("the view's encoding is not the filter at the instant")
	}
}
