package server

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
)

// Client-side caching across connections: a write on one connection
// reaches another as an invalidation push, however each is served, and
// with either backend. (On one connection, conn.transcript holds Redis's
// own replies.)

// invalidation is the push for key.
func invalidation(key string) string {
	return ">2\r\n$10\r\ninvalidate\r\n*1\r\n" + rawBulk(key)
}

const invalidateAll = ">2\r\n$10\r\ninvalidate\r\n_\r\n"

// serverKinds are the ways a connection is served, each a server to
// start: event loops and goroutines on the memory backend, and the Redis
// backend. Tracking and pipelined runs (conn_run_test.go) must work in
// each.
func serverKinds(t *testing.T) map[string]func(t *testing.T) (*Server, string) {
	return map[string]func(t *testing.T) (*Server, string){
		"event loops":        func(t *testing.T) (*Server, string) { return startServer(t, Config{}) },
		"goroutine per conn": func(t *testing.T) (*Server, string) { return startServer(t, Config{GoroutinePerConn: true}) },
		"event loops, logged": func(t *testing.T) (*Server, string) { // runs of adds wait for the log
			return startServer(t, Config{Dir: t.TempDir()})
		},
		"redis backend": func(t *testing.T) (*Server, string) {
			return startServer(t, Config{Backend: "redis://" + redistest.Start(t).Addr()})
		},
	}
}

// resp3 is a raw connection after HELLO 3.
func resp3(t *testing.T, addr string) *rawConn {
	r := dialRaw(t, addr)
	if got := r.do("HELLO", "3"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3: %q", got)
	}
	return r
}

// TestTrackingAcrossConnections: a client that read a key gets its
// invalidation when another client writes it, while it sits idle
// waiting for input (a goroutine-served connection blocked in read, an
// event-loop one in epoll), once per read; a BCAST client gets every key
// under its prefix; FLUSHALL reaches every tracking client.
func TestTrackingAcrossConnections(t *testing.T) {
	for name, start := range serverKinds(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, addr := start(t)
			reader, bcast, writer := resp3(t, addr), resp3(t, addr), dialRaw(t, addr)
			reader.do("CLIENT", "TRACKING", "ON")
			bcast.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:")
			reader.do("BF.EXISTS", "user:1", "a")
			if got := writer.do("BF.ADD", "user:1", "a"); got != rawInt(1) {
				t.Fatalf("BF.ADD: %q", got)
			}
			// Read without sending: the push must come by itself.
			if got := reader.reply(); got != invalidation("user:1") {
				t.Fatalf("reader got %q, want the invalidation of user:1", got)
			}
			if got := bcast.reply(); got != invalidation("user:1") {
				t.Fatalf("BCAST client got %q, want the invalidation of user:1", got)
			}
			// Not read again: a second write is not reported; then a read
			// and a write are.
			writer.do("BF.ADD", "user:1", "b")
			writer.do("BF.ADD", "other", "b")
			if got := reader.do("BF.EXISTS", "user:1", "a"); got != "#t\r\n" {
				t.Fatalf("reader's read: %q (a push it should not have had?)", got)
			}
			writer.do("DEL", "user:1")
			if got := reader.reply(); got != invalidation("user:1") {
				t.Fatalf("reader after DEL: %q", got)
			}
			for _, want := range []string{invalidation("user:1"), invalidation("user:1")} {
				if got := bcast.reply(); got != want {
					t.Fatalf("BCAST client: %q, want %q", got, want)
				}
			}
			writer.do("FLUSHALL")
			for _, c := range []*rawConn{reader, bcast} {
				if got := c.reply(); got != invalidateAll {
					t.Fatalf("after FLUSHALL: %q", got)
				}
			}
			if got := bcast.do("PING"); got != "+PONG\r\n" {
				t.Fatalf("BCAST client's PING: %q (a push for a key outside its prefix?)", got)
			}
		})
	}
}

// TestTrackingOptInCachedRead is what rueidis does for a cached read, and
// another client's write then.
func TestTrackingOptInCachedRead(t *testing.T) {
	for name, start := range serverKinds(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, addr := start(t)
			c, writer := resp3(t, addr), dialRaw(t, addr)
			c.do("CLIENT", "TRACKING", "ON", "OPTIN")
			c.do("BF.EXISTS", "k", "a") // not cached: no CACHING YES
			c.send(encodeCommand("CLIENT", "CACHING", "YES") + encodeCommand("MULTI") +
				encodeCommand("PTTL", "j") + encodeCommand("BF.EXISTS", "j", "a") + encodeCommand("EXEC"))
			for _, want := range []string{"+OK\r\n", "+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n:-2\r\n#f\r\n"} {
				if got := c.reply(); got != want {
					t.Fatalf("cached read: %q, want %q", got, want)
				}
			}
			writer.do("BF.ADD", "k", "a")
			writer.do("BF.ADD", "j", "a")
			if got := c.reply(); got != invalidation("j") {
				t.Fatalf("got %q, want the invalidation of j only", got)
			}
		})
	}
}

// TestTrackingExpiry: a key the memory keyspace deletes when its time
// comes is invalidated too, by the sweep while every client is idle.
func TestTrackingExpiry(t *testing.T) {
	for _, cfg := range []Config{{}, {GoroutinePerConn: true}} {
		_, addr := startServer(t, cfg)
		c, w := resp3(t, addr), dialRaw(t, addr)
		c.do("CLIENT", "TRACKING", "ON")
		w.do("BF.ADD", "k", "a")
		c.do("BF.EXISTS", "k", "a")
		w.do("PEXPIRE", "k", "50")
		if got := c.reply(); got != invalidation("k") {
			t.Fatalf("after PEXPIRE: %q", got)
		}
		c.do("BF.EXISTS", "k", "a")
		if got := c.reply(); got != invalidation("k") {
			t.Fatalf("when k expired: %q", got)
		}
	}
}

// TestTrackingNoLoopAndRedirect: NOLOOP spares a client its own writes,
// not others'; REDIRECT sends a client's invalidations to another RESP3
// connection, and reports once, when that one is gone, that it broke.
func TestTrackingNoLoopAndRedirect(t *testing.T) {
	_, addr := startServer(t, Config{})
	c, target, w := resp3(t, addr), resp3(t, addr), dialRaw(t, addr)
	c.do("CLIENT", "TRACKING", "ON", "NOLOOP")
	c.do("BF.EXISTS", "k", "a")
	c.do("BF.ADD", "k", "a")
	c.do("BF.EXISTS", "k", "a")
	w.do("BF.ADD", "k", "b")
	if got := c.reply(); got != invalidation("k") {
		t.Fatalf("NOLOOP, another client's write: %q", got)
	}

	id := strings.TrimSuffix(strings.TrimPrefix(target.do("CLIENT", "ID"), ":"), "\r\n")
	r2 := dialRaw(t, addr) // RESP2: cannot receive pushes without SUBSCRIBE
	r2id := strings.TrimSuffix(strings.TrimPrefix(r2.do("CLIENT", "ID"), ":"), "\r\n")
	if got := c.do("CLIENT", "TRACKING", "ON", "REDIRECT", r2id); !strings.HasPrefix(got, "-ERR REDIRECT to a RESP2") {
		t.Fatalf("REDIRECT to a RESP2 connection: %q", got)
	}
	c.do("CLIENT", "TRACKING", "OFF")
	if got := c.do("CLIENT", "TRACKING", "ON", "REDIRECT", id); got != "+OK\r\n" {
		t.Fatalf("REDIRECT: %q", got)
	}
	if got := c.do("CLIENT", "GETREDIR"); got != ":"+id+"\r\n" {
		t.Fatalf("GETREDIR: %q, want %s", got, id)
	}
	c.do("BF.EXISTS", "k", "a")
	w.do("BF.ADD", "k", "c")
	if got := target.reply(); got != invalidation("k") {
		t.Fatalf("redirect target: %q", got)
	}
	target.nc.Close()
	probe := dialRaw(t, addr)
	waitFor(t, "the target's close", func() bool {
		return strings.Contains(probe.do("CLIENT", "TRACKING", "ON", "REDIRECT", id), "does not exist")
	})
	c.do("BF.EXISTS", "k", "a")
	w.do("BF.ADD", "k", "d")
	if got := c.reply(); got != ">2\r\n$21\r\ntracking-redir-broken\r\n:"+id+"\r\n" {
		t.Fatalf("after the target left: %q", got)
	}
	if got := c.do("CLIENT", "TRACKINGINFO"); !strings.Contains(got, "broken_redirect") {
		t.Fatalf("TRACKINGINFO: %q", got)
	}
}

// TestTrackingTableBound: past the table's limit, remembered keys are
// invalidated to make room; a client that does not read its pushes has
// them collapse into one "invalidate everything".
func TestTrackingTableBound(t *testing.T) {
	srv, addr := startServer(t, Config{})
	srv.track.mu.Lock()
	srv.track.maxKeys = 10
	srv.track.mu.Unlock()
	c := resp3(t, addr)
	c.do("CLIENT", "TRACKING", "ON")
	for i := range 11 {
		c.do("BF.EXISTS", "k"+strconv.Itoa(i), "a")
	}
	if got := c.reply(); !strings.HasPrefix(got, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk") {
		t.Fatalf("the 11th key: %q, want an eviction's invalidation", got)
	}
	srv.track.mu.Lock()
	n := len(srv.track.keys)
	srv.track.mu.Unlock()
	if n != 10 {
		t.Fatalf("%d keys remembered, want 10", n)
	}

	var box conn
	keys := make([]string, maxPushKeys)
	box.box.waiting = true // no owner to wake
	box.pushInvalidate(keys[:maxPushKeys-1])
	box.pushInvalidate(keys[:2])
	if !box.box.all || box.box.keys != nil {
		t.Fatalf("a full mailbox kept %d keys (all %v)", len(box.box.keys), box.box.all)
	}
}

// TestTrackingRace runs tracking readers and writers concurrently, for
// the race detector, and checks each reader is told of the last write.
func TestTrackingRace(t *testing.T) {
	for _, cfg := range []Config{{}, {GoroutinePerConn: true}} {
		_, addr := startServer(t, cfg)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := resp3(t, addr)
				c.do("CLIENT", "TRACKING", "ON")
				key := "k" + strconv.Itoa(i%2)
				for range 50 {
					c.send(encodeCommand("BF.EXISTS", key, "a") + encodeCommand("BF.ADD", key, "x"))
					for replies := 0; replies < 2; {
						switch got := c.reply(); {
						case got == "#f\r\n" || got == "#t\r\n":
							replies++
						case got != invalidation(key):
							t.Errorf("%q among the replies", got)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
	}
}
