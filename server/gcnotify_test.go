package server

import (
	"runtime"
	"testing"
	"time"
)

// TestAfterEachGC: a collection sends a signal, again after the next
// one, and none once done is closed.
func TestAfterEachGC(t *testing.T) {
	onePath(t)
	ch, done := make(chan struct{}, 1), make(chan struct{})
	afterEachGC(ch, done)
	for i := range 3 {
		runtime.GC()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no signal after collection %d", i+1)
		}
	}
	close(done)
	runtime.GC() // runs the finalizer, which now stops
	runtime.GC()
	time.Sleep(50 * time.Millisecond) // finalizers run on their own goroutine
	select {
	case <-ch:
	default:
	}
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-ch:
		t.Fatal("a signal after done was closed")
	default:
	}
}
