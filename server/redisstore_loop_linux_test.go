package server

import (
	"context"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
)

// TestLoopRunsDoNotWaitOnRedis: on the Redis backend an event loop hands
// a connection's run to its lane and goes on (endRunAsync). While the
// backing Redis sleeps, one client's pipelined BF.ADDs and BF.EXISTSs
// wait for it, and another client's PING, which the loop answers itself,
// does not; the waiting runs are then answered in order, each as alone.
func TestLoopRunsDoNotWaitOnRedis(t *testing.T) {
	if streamPass {
		t.Skip("the second pass serves connections with goroutines; the first ran this")
	}
	ctx := context.Background()
	rd := redistest.Start(t, "--enable-debug-command", "yes")
	srv, addr := startServer(t, Config{Backend: "redis://" + rd.Addr()})
	if srv.loopsN == 0 {
		t.Fatal("the Redis backend is served by goroutines: no event loop to test")
	}
	setup := newClient(t, addr, 2)
	want(t, setup, cmd("OK", "BF.RESERVE", "bf", "0.001", "10000"))
	const sleep = 600 * time.Millisecond
	slept := make(chan error, 1)
	go func() { slept <- redisDirect(t, rd.Addr()).Do(ctx, "DEBUG", "SLEEP", sleep.Seconds()).Err() }()
	time.Sleep(50 * time.Millisecond) // the sleep has begun

	pipe := newClient(t, addr, 2)
	answered := make(chan []any, 1)
	go func() {
		p := pipe.Pipeline()
		a1, a2 := p.Do(ctx, "BF.ADD", "bf", "x"), p.Do(ctx, "BF.ADD", "bf", "x")
		e1, e2 := p.Do(ctx, "BF.EXISTS", "bf", "x"), p.Do(ctx, "BF.EXISTS", "bf", "y")
		_, err := p.Exec(ctx)
		if err != nil {
			t.Error(err)
		}
		answered <- []any{a1.Val(), a2.Val(), e1.Val(), e2.Val()}
	}()
	time.Sleep(50 * time.Millisecond) // the runs wait on the sleeping Redis

	ping := newClient(t, addr, 2)
	start := time.Now()
	if err := ping.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > sleep/3 {
		t.Errorf("PING took %v while a run waited on Redis: the event loop waited too", took)
	}
	select {
	case got := <-answered:
		t.Fatalf("the runs were answered while Redis slept: %v", got)
	default:
	}
	got := <-answered
	if w := []any{int64(1), int64(0), int64(1), int64(0)}; len(got) != 4 || got[0] != w[0] || got[1] != w[1] || got[2] != w[2] || got[3] != w[3] {
		t.Errorf("pipelined BF.ADD x, BF.ADD x, BF.EXISTS x, BF.EXISTS y = %v, want %v", got, w)
	}
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
}

// TestRedisLoopsOptIn: the Redis backend is served by goroutines unless
// RedisLoops asks for the event loops (GoroutinePerConn still wins).
func TestRedisLoopsOptIn(t *testing.T) {
	rd := redistest.Start(t)
	for _, tc := range []struct {
		cfg   Config
		loops bool
	}{
		{Config{}, false},
		{Config{RedisLoops: true}, true},
		{Config{RedisLoops: true, GoroutinePerConn: true}, false},
	} {
		tc.cfg.Backend, tc.cfg.Dir, tc.cfg.Addr = "redis://"+rd.Addr(), "-", "127.0.0.1:0"
		srv, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.loopsN > 0; got != tc.loops {
			t.Errorf("RedisLoops %v, GoroutinePerConn %v: event loops %v, want %v", tc.cfg.RedisLoops, tc.cfg.GoroutinePerConn, got, tc.loops)
		}
		srv.Shutdown(context.Background())
	}
}
