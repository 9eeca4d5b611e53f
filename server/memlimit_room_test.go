package server

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"testing"
)

// TestMemoryLimitRoomAboveFragmentation: the limit setMemoryLimit sets
// leaves its room above all the memory the runtime counts against it and
// a collection cannot free, fragmentation included. A heap of small
// objects of which every other one is dropped keeps its spans; with the
// spans' unused parts left out, the limit fell under the heap and the
// collector ran back to back.
func TestMemoryLimitRoomAboveFragmentation(t *testing.T) {
	onePath(t)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	keep := make([]*[64]byte, 400_000)
	for i := range keep {
		keep[i] = new([64]byte)
	}
	for i := 0; i < len(keep); i += 2 {
		keep[i] = nil
	}
	samples := []rtmetrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	var room, unused int64
	for range 5 { // other goroutines of the process may allocate between the collection and the reading
		runtime.GC()
		limit := setMemoryLimit(-1, memoryRoom)
		rtmetrics.Read(samples)
		held := int64(samples[0].Value.Uint64() - samples[1].Value.Uint64() - samples[2].Value.Uint64())
		room, unused = limit-held, int64(samples[3].Value.Uint64())
		if room >= memoryRoom/2 {
			break
		}
	}
	runtime.KeepAlive(keep)
	if room < memoryRoom/2 {
		t.Fatalf("the limit leaves %d bytes above what the heap holds (%d of it unused in spans); want about %d", room, unused, memoryRoom)
	}
	t.Logf("room %d bytes above the heap, with %d unused in spans", room, unused)
}
