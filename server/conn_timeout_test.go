package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Timeouts of a connection, seen from clients: --timeout is idleness
// (counted from the last byte received), a client that does not read its
// replies is closed after the write timeout, and such a client does not
// hold up Shutdown.

// TestClientIdleTimeoutSlowUpload: a client sending one large argument
// slowly but steadily is never idle, so it is not cut off however long
// the command takes to arrive (redis-server completes it too).
func TestClientIdleTimeoutSlowUpload(t *testing.T) {
	const idle = 300 * time.Millisecond
	_, addr := startServer(t, Config{IdleTimeout: idle})
	r := dialRaw(t, addr)
	const size, pieces = 4 << 20, 16
	r.send(fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n", size))
	piece := strings.Repeat("x", size/pieces)
	start := time.Now()
	for range pieces {
		time.Sleep(idle / 3)
		r.send(piece)
	}
	r.send("\r\n")
	if took := time.Since(start); took < 3*idle {
		t.Fatalf("the upload took %v, less than 3 idle timeouts: the test proves nothing", took)
	}
	if got := r.reply(); got != rawBulk(strings.Repeat("x", size)) {
		t.Fatalf("ECHO of a slowly uploaded %d-byte argument: got %d bytes %q…", size, len(got), truncate(got, 40))
	}
}

// stuckClient connects to addr and sends ECHO commands with 1 MiB
// arguments without ever reading a reply, until the server stops reading
// them (its replies have filled both sockets' buffers and it is blocked
// writing). It returns once its writes have made no progress for 300 ms.
func stuckClient(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	cmd := []byte(encodeCommand("ECHO", strings.Repeat("x", 1<<20)))
	var sent atomic.Int64
	go func() {
		for {
			n, err := nc.Write(cmd)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	last := int64(-1)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		if s := sent.Load(); s == last && s > 0 {
			return nc
		}
		last = sent.Load()
	}
	t.Fatal("the client's writes never stalled")
	return nil
}

// TestShutdownClientNotReading: a client that never reads its replies
// does not hold up Shutdown (it waited for its context, 30 s in bloomery
// serve, before).
func TestShutdownClientNotReading(t *testing.T) {
	srv, addr := startServer(t, Config{}) // the default write timeout, 60 s
	stuckClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Shutdown took %v with a client not reading its replies; want a few seconds at most", took)
	}
}

// TestClientNotReadingClosed: a client that does not read its replies is
// closed after WriteTimeout (it held its connection forever), and the
// others are served meanwhile.
func TestClientNotReadingClosed(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv, addr := startServer(t, Config{WriteTimeout: timeout})
	other := dialRaw(t, addr)
	stuck := stuckClient(t, addr)
	stalled := time.Now()
	for srv.stats.clients.Load() > 1 {
		if time.Since(stalled) > 10*time.Second {
			t.Fatalf("the client not reading is still connected after %v (write timeout %v)", time.Since(stalled), timeout)
		}
		if got := other.do("PING"); got != rawStatus("PONG") {
			t.Fatalf("another client: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Its side sees the connection end.
	stuck.SetReadDeadline(time.Now().Add(rawTimeout))
	if _, err := io.Copy(io.Discard, stuck); err != nil && !isReset(err) {
		t.Errorf("reading what the server sent before closing: %v", err)
	}
}
