package server

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessorKeeper: the keeper adds a processor for the one it holds
// and counts as a blocking loop, once for every holder; the last release
// gives both back; a release twice counts once; and while it holds its
// processor asleep in the kernel, a collection's stop-the-world still
// reaches it (a keeper that ignored the preemption signal would hang
// runtime.GC for ever).
func TestProcessorKeeper(t *testing.T) {
	procs, loops := runtime.GOMAXPROCS(0), blockingLoops.Load()
	a, err := holdProcessor()
	if err != nil {
		t.Fatal(err)
	}
	b, err := holdProcessor()
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != procs+1 {
		t.Errorf("GOMAXPROCS %d with two holders, want %d", got, procs+1)
	}
	if got := blockingLoops.Load(); got != loops+1 {
		t.Errorf("blocking loops %d with two holders, want %d", got, loops+1)
	}
	collected := make(chan struct{})
	go func() {
		for range 5 {
			runtime.GC()
		}
		close(collected)
	}()
	select {
	case <-collected:
	case <-time.After(30 * time.Second):
		t.Fatal("runtime.GC did not return while the keeper held its processor")
	}
	a()
	a() // counted once
	if got := runtime.GOMAXPROCS(0); got != procs+1 {
		t.Errorf("GOMAXPROCS %d with one holder left, want %d", got, procs+1)
	}
	b()
	if got, l := runtime.GOMAXPROCS(0), blockingLoops.Load(); got != procs || l != loops {
		t.Errorf("after the last release: GOMAXPROCS %d, blocking loops %d; want %d, %d", got, l, procs, loops)
	}
	c, err := holdProcessor() // a new keeper after the last one stopped
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != procs+1 {
		t.Errorf("GOMAXPROCS %d after a restart, want %d", got, procs+1)
	}
	c()
}
