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
	if got, want := eventLoops(Config{Backend: "memory"}), max(1, procs-1); got != want {
		t.Errorf("a memory server would start %d event loops with a keeper held, want %d as without", got, want)
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
	runtime.GOMAXPROCS(procs + 3) // someone else's setting, while the keeper holds
	c()
	if got := runtime.GOMAXPROCS(0); got != procs+3 {
		t.Errorf("GOMAXPROCS %d after the release, want %d: a setting made during the hold stands", got, procs+3)
	}
	runtime.GOMAXPROCS(procs)
}

// TestPreemptSignalsIn: GODEBUG's asyncpreemptoff turns the preemption
// signals off with any number but 0, the last setting counting; a value
// that is not a number is ignored, as the runtime ignores it.
func TestPreemptSignalsIn(t *testing.T) {
	for _, tc := range []struct {
		godebug string
		on      bool
	}{
		{"", true},
		{"asyncpreemptoff=0", true},
		{"asyncpreemptoff=1", false},
		{"asyncpreemptoff=2", false},
		{"gctrace=1,asyncpreemptoff=1", false},
		{"asyncpreemptoff=1,asyncpreemptoff=0", true},
		{"asyncpreemptoff=0,asyncpreemptoff=1", false},
		{"asyncpreemptoff=yes", true},
		{"asyncpreemptoff=1,asyncpreemptoff=x", false},
		{"xasyncpreemptoff=1", true},
	} {
		if got := preemptSignalsIn(tc.godebug); got != tc.on {
			t.Errorf("GODEBUG=%q: signals on %v, want %v", tc.godebug, got, tc.on)
		}
	}
}
