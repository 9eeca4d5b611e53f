package server

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// The event loops' blocking wait (eventLoop.block) exists on Linux only.

// TestLoopBlockedCollects: an event loop blocked in epoll_wait with no
// time limit (no connections) keeps its processor, yet garbage
// collections, whose stop-the-world must stop it, complete (the
// runtime's preemption signal interrupts the wait), and it still serves.
func TestLoopBlockedCollects(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("with one processor the loops park in Go's scheduler instead of blocking")
	}
	onePath(t)
	srv, addr := startServer(t, Config{EventLoops: 1})
	c := dialRaw(t, addr)
	if got := c.do("PING"); got != rawStatus("PONG") { // the loops run
		t.Fatalf("PING: %q", got)
	}
	c.nc.Close()
	srv.mu.Lock()
	loops := srv.loops
	srv.mu.Unlock()
	if len(loops) != 1 || !loops[0].block {
		t.Fatalf("%d loops: want one, blocking", len(loops))
	}
	time.Sleep(50 * time.Millisecond) // the loop has closed the connection and waits in epoll_wait
	done := make(chan struct{})
	go func() {
		for range 5 {
			runtime.GC()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("garbage collection did not complete while the loop was blocked")
	}
	if got := dialRaw(t, addr).do("PING"); got != rawStatus("PONG") {
		t.Fatalf("PING after: %q", got)
	}
}

// TestBlockingLoopsAcrossServers: the loops that block in epoll_wait,
// holding a processor each, leave one processor to the rest of the
// process across Servers, not only within one: with two processors, the
// first server's loop blocks and a second server's parks in Go's
// scheduler (two blocked loops would take both, and every other
// goroutine of the process would wait for a preemption signal to run);
// once the first server has shut down, a new one blocks again.
func TestBlockingLoopsAcrossServers(t *testing.T) {
	onePath(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	blocks := func(srv *Server, addr string) bool {
		if got := dialRaw(t, addr).do("PING"); got != rawStatus("PONG") { // the loops run
			t.Fatalf("PING: %q", got)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if len(srv.loops) != 1 {
			t.Fatalf("%d loops, want 1", len(srv.loops))
		}
		return srv.loops[0].block
	}
	// Each server starts its loops in Serve, on a goroutine of its own:
	// the first has answered a PING (its loops run) before the second
	// starts, or the two would race for the processor left.
	first, addr1 := startServer(t, Config{EventLoops: 1})
	firstBlocks := blocks(first, addr1)
	second, addr2 := startServer(t, Config{EventLoops: 1})
	if secondBlocks := blocks(second, addr2); !firstBlocks || secondBlocks {
		t.Fatalf("first server's loop blocks: %v, second's: %v; want true, false", firstBlocks, secondBlocks)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if third, addr3 := startServer(t, Config{EventLoops: 1}); !blocks(third, addr3) {
		t.Fatal("a server started after the first shut down: its loop does not block")
	}
}
