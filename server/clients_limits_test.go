package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/resp"
	"github.com/redis/go-redis/v9"
)

// The server's input limits and timeouts, seen from clients: a command
// past a limit closes its connection (with Redis's protocol error where
// Redis sends one) and the server keeps serving the others.

func TestClientLimits(t *testing.T) {
	// Limits below Redis's minimums (New refuses them), so that small
	// commands reach them.
	_, addr := startServerTuned(t, Config{}, func(s *Server) {
		s.cfg.Limits = resp.Limits{MaxBulk: 1024, MaxArgs: 16, MaxInline: 512, MaxQueryBuffer: 8192}
	})
	ctx := context.Background()
	other := newClient(t, addr, 3)
	if err := other.BFAdd(ctx, "k", "a").Err(); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1000)
	for _, c := range []struct {
		name, in, want string
	}{
		{"bulk over MaxBulk", encodeCommand("PING") + "*2\r\n$4\r\nECHO\r\n$1025\r\n", rawStatus("PONG") + rawErr("ERR Protocol error: invalid bulk length")},
		{"args over MaxArgs", "*17\r\n", rawErr("ERR Protocol error: invalid multibulk length")},
		{"negative bulk", "*1\r\n$-2\r\n", rawErr("ERR Protocol error: invalid bulk length")},
		{"inline over MaxInline", strings.Repeat("a", 600) + "\r\n", rawErr("ERR Protocol error: too big inline request")},
		{"count line over MaxInline", "*1\r\n$" + strings.Repeat("1", 600) + "\r\n", rawErr("ERR Protocol error: too big bulk count string")},
		// Redis closes a client over its query buffer limit without a reply.
		{"command over MaxQueryBuffer", encodeCommand("BF.MADD", "k", big, big, big, big, big, big, big, big, big), ""},
	} {
		r := dialRaw(t, addr)
		r.send(c.in)
		if got := r.expectClosed(); got != c.want {
			t.Errorf("%s: got %q, want %q and the connection closed", c.name, got, c.want)
		}
		if found, err := other.BFExists(ctx, "k", "a").Result(); err != nil || !found {
			t.Errorf("after %s, another client: %v, %v", c.name, found, err)
		}
	}
	if found := other.BFExists(ctx, "k", big).Val(); found {
		t.Error("the command over the query buffer limit was run")
	}
	// Within the limits everything passes: 16 arguments, 1024-byte items.
	item := strings.Repeat("y", 1024)
	if got, err := other.BFMAdd(ctx, "k", item, "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n").Result(); err != nil || len(got) != 14 {
		t.Errorf("BF.MADD of 16 arguments: %v, %v", got, err)
	}
	// A go-redis client whose command is refused gets Redis's error, and
	// its next command runs on a new connection. (The pool may hand out
	// the closed connection once more if the close has not arrived yet;
	// go-redis's retry, on by default, then dials anew.)
	c := newClient(t, addr, 2, func(o *redis.Options) { o.MaxRetries = 1 })
	if err := c.BFAdd(ctx, "k", strings.Repeat("z", 2000)).Err(); err == nil || err.Error() != "ERR Protocol error: invalid bulk length" {
		t.Errorf("BFAdd of a 2000-byte item: %v, want the protocol error", err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after a refused command: %v", err)
	}
}

func TestClientIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	_, addr := startServer(t, Config{IdleTimeout: idle})
	quiet := dialRaw(t, addr)
	busy := dialRaw(t, addr)
	if got := quiet.do("PING"); got != rawStatus("PONG") {
		t.Fatalf("PING: %q", got)
	}
	start := time.Now()
	done := make(chan time.Duration, 1)
	go func() {
		quiet.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 1)
		quiet.nc.Read(buf) // returns when the server closes
		done <- time.Since(start)
	}()
	// The busy client, never idle that long, stays.
	for time.Since(start) < 3*idle {
		if got := busy.do("PING"); got != rawStatus("PONG") {
			t.Fatalf("busy client PING: %q", got)
		}
		time.Sleep(idle / 5)
	}
	select {
	case d := <-done:
		if d < idle-50*time.Millisecond || d > 2*idle+time.Second {
			t.Errorf("idle client closed after %v, want about %v", d, idle)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the idle client was not closed")
	}
	if got := busy.do("ECHO", "still here"); got != rawBulk("still here") {
		t.Errorf("busy client after %v: %q", time.Since(start), got)
	}
}

func TestClientMaxClients(t *testing.T) {
	_, addr := startServer(t, Config{MaxClients: 2})
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	a.do("PING")
	b.do("PING")
	if got := dialRaw(t, addr).expectClosed(); got != rawErr("ERR max number of clients reached") {
		t.Errorf("third client: got %q, want the max clients error", got)
	}
	a.nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := dialRaw(t, addr)
		c.send(encodeCommand("PING"))
		c.nc.SetReadDeadline(time.Now().Add(rawTimeout))
		got, _ := readRawReply(c.br)
		if got == rawStatus("PONG") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a client left, a new one still gets %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
