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
	ctx := context.Background()
	_, addr, _, sleepFor := sleepingRedis(t) // both clients on its one loop
	const sleep = 600 * time.Millisecond
	slept := sleepFor(sleep)

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

// TestRedisBackendOnLoops: the Redis backend is served by the event
// loops, as the memory backend is, unless GoroutinePerConn.
func TestRedisBackendOnLoops(t *testing.T) {
	rd := redistest.Start(t)
	for _, tc := range []struct {
		cfg   Config
		loops bool
	}{
		{Config{}, true},
		{Config{GoroutinePerConn: true}, false},
	} {
		tc.cfg.Backend, tc.cfg.Dir, tc.cfg.Addr = "redis://"+rd.Addr(), "-", "127.0.0.1:0"
		srv, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.loopsN > 0; got != tc.loops {
			t.Errorf("GoroutinePerConn %v: event loops %v, want %v", tc.cfg.GoroutinePerConn, got, tc.loops)
		}
		srv.Shutdown(context.Background())
	}
}

// sleepingRedis starts a redis-server that takes DEBUG and a server of
// one event loop in front of it (from pathConfig), reserves
// the filter bf, and returns the server, its address, the client that
// reserved bf, and a func that puts the Redis to sleep for d, in the
// background, once the sleep has begun.
func sleepingRedis(t *testing.T) (*Server, string, *rawConn, func(d time.Duration) <-chan error) {
	t.Helper()
	if streamPass {
		t.Skip("the second pass serves connections with goroutines; the first ran this")
	}
	rd := redistest.Start(t, "--enable-debug-command", "yes")
	srv, addr := startServer(t, Config{Backend: "redis://" + rd.Addr(), EventLoops: 1})
	if srv.loopsN == 0 {
		t.Fatal("the Redis backend is served by goroutines: no event loop to test")
	}
	setup := dialRaw(t, addr)
	if got := setup.do("BF.RESERVE", "bf", "0.001", "1000"); got != "+OK\r\n" {
		t.Fatalf("BF.RESERVE: %q", got)
	}
	direct := redisDirect(t, rd.Addr())
	return srv, addr, setup, func(d time.Duration) <-chan error {
		done := make(chan error, 1)
		go func() { done <- direct.Do(context.Background(), "DEBUG", "SLEEP", d.Seconds()).Err() }()
		time.Sleep(50 * time.Millisecond)
		return done
	}
}

// TestLoopProtocolErrorAfterRun: a protocol error read after a pending
// run does not make the loop wait for the run's round trip: another
// client's PING is answered while Redis sleeps, and the run is answered
// before the error closes the connection.
func TestLoopProtocolErrorAfterRun(t *testing.T) {
	_, addr, _, sleep := sleepingRedis(t)
	slept := sleep(600 * time.Millisecond)
	bad := dialRaw(t, addr)
	bad.send(encodeCommand("BF.ADD", "bf", "x") + "*1x\r\n")
	time.Sleep(50 * time.Millisecond)
	ping := dialRaw(t, addr)
	start := time.Now()
	if got := ping.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Errorf("PING took %v behind a run and a protocol error: the loop waited on Redis", took)
	}
	if got := bad.reply(); got != rawInt(1) {
		t.Errorf("BF.ADD before the protocol error: %q, want %q", got, rawInt(1))
	}
	if got := bad.reply(); len(got) == 0 || got[0] != '-' {
		t.Errorf("after the run: %q, want the protocol error", got)
	}
	bad.expectClosed()
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
}

// TestLoopSyncLeaderHandsToAsync: a lane led by a goroutine's command
// (BF.INSERT runs off the loop, waiting in its lane) hands the next
// batch, a loop's run, to a goroutine of its own: the run is answered.
func TestLoopSyncLeaderHandsToAsync(t *testing.T) {
	_, addr, _, sleep := sleepingRedis(t)
	slept := sleep(400 * time.Millisecond)
	insert := dialRaw(t, addr)
	insert.send(encodeCommand("BF.INSERT", "bf", "ITEMS", "a")) // leads the lane, waiting on Redis
	time.Sleep(50 * time.Millisecond)
	add := dialRaw(t, addr)
	add.send(encodeCommand("BF.ADD", "bf", "b")) // queues behind it, asynchronously
	if got := add.reply(); got != rawInt(1) {
		t.Errorf("BF.ADD behind a goroutine's batch: %q, want %q", got, rawInt(1))
	}
	if got := insert.reply(); got != "*1\r\n"+rawInt(1) {
		t.Errorf("BF.INSERT: %q", got)
	}
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
}

// TestLoopShutdownDuringRun: a graceful Shutdown while a run waits on
// Redis answers the run, runs the command read before the shutdown, and
// refuses the next one received, as a goroutine-served connection does.
func TestLoopShutdownDuringRun(t *testing.T) {
	srv, addr, _, sleep := sleepingRedis(t)
	slept := sleep(500 * time.Millisecond)
	c := dialRaw(t, addr)
	c.send(encodeCommand("BF.ADD", "bf", "x") + encodeCommand("BF.ADD", "bf", "y") + encodeCommand("PING") +
		encodeCommand("BF.EXISTS", "bf", "x"))
	time.Sleep(50 * time.Millisecond) // the run waits on Redis, PING held behind it, BF.EXISTS buffered
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	want := rawInt(1) + rawInt(1) + "+PONG\r\n" + "-ERR server is shutting down\r\n"
	if got := c.expectClosed(); got != want {
		t.Errorf("replies %q, want %q", got, want)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
}

// TestLoopClientGoneDuringRun: a client that closes its connection while
// its run waits on Redis is counted out once the run is answered, and
// the loop goes on serving others; a forced Shutdown with another run in
// flight returns within its time.
func TestLoopClientGoneDuringRun(t *testing.T) {
	srv, addr, setup, sleep := sleepingRedis(t)
	slept := sleep(400 * time.Millisecond)
	gone := dialRaw(t, addr)
	gone.send(encodeCommand("BF.ADD", "bf", "x") + encodeCommand("BF.ADD", "bf", "y"))
	time.Sleep(50 * time.Millisecond) // the run waits on Redis
	gone.nc.Close()
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the gone client counted out", func() bool { return srv.stats.clients.Load() == 1 })
	if got := setup.do("BF.EXISTS", "bf", "x"); got != rawInt(1) {
		t.Errorf("BF.EXISTS of the gone client's item: %q (its run was answered to nobody, but ran)", got)
	}

	slept = sleep(2 * time.Second)
	busy := dialRaw(t, addr)
	busy.send(encodeCommand("BF.ADD", "bf", "z"))
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	srv.Shutdown(ctx) // its time runs out: the busy connection is closed
	if took := time.Since(start); took > time.Second {
		t.Errorf("forced Shutdown took %v with a run in flight", took)
	}
	busy.expectClosed()
	<-slept
	waitFor(t, "every client counted out", func() bool { return srv.stats.clients.Load() == 0 })
}
