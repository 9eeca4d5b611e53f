package server

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"runtime"
	rtmetrics "runtime/metrics"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
)

// goGC reads the runtime's GOGC (-1: off) and soft memory limit.
func goGC() (percent int64, limit uint64) {
	s := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	rtmetrics.Read(s)
	return int64(s[0].Value.Uint64()), s[1].Value.Uint64()
}

// TestRedisBackendManagesGC: with ManageGoRuntime, the Redis backend turns
// GOGC off under a soft memory limit of what is live plus room, on Linux
// holds a processor with the keeper once it serves connections with
// goroutines (keeper_linux.go: one more in GOMAXPROCS), and gives the runtime its settings back when the
// server shuts down; without it, the runtime is left alone.
func TestRedisBackendManagesGC(t *testing.T) {
	rd := redistest.Start(t)
	before, _ := goGC()
	procs := runtime.GOMAXPROCS(0)
	_, _ = startServer(t, Config{Backend: "redis://" + rd.Addr()})
	if p, l := goGC(); p != before || l != math.MaxInt64 {
		t.Fatalf("without ManageGoRuntime: GOGC %d, limit %d", p, l)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Fatalf("without ManageGoRuntime: GOMAXPROCS %d, want %d", got, procs)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Served by goroutines: the keeper's case (event loops hold their
	// processors themselves and start none).
	srv, err := New(pathConfig(Config{Backend: "redis://" + rd.Addr(), Dir: "-", Addr: "127.0.0.1:0", ManageGoRuntime: true,
		GoroutinePerConn: true, Logger: quiet}))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "GOGC off", func() bool { p, _ := goGC(); return p == -1 })
	if _, l := goGC(); l < 64<<20 || l > 1<<40 {
		t.Errorf("memory limit %d, want live memory and 64 MiB of room", l)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d before serving, want %d: the keeper starts with serving", got, procs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	waitFor(t, "the keeper's processor", func() bool { return runtime.GOMAXPROCS(0) == procs+keeperProcs })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	waitFor(t, "the runtime's settings back", func() bool { p, l := goGC(); return p == before && l == math.MaxInt64 })
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after shutdown, want %d", got, procs)
	}
}
