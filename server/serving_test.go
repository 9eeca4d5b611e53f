package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
)

// How connections are served, seen from clients, on both paths (the
// event loop and a goroutine per connection; see paths_test.go): a slow
// command does not hold up other clients and keeps its pipeline's order,
// a client that reads slowly gets every byte, many clients at once, and
// listeners that give no socket.

// blockingScan is a backend whose Scan waits until release is closed, to
// hold a KEYS in the middle of its walk.
type blockingScan struct {
	keyStore
	entered chan struct{} // receives once per Scan call
	release chan struct{}
}

func (b *blockingScan) Scan(ctx context.Context, cursor uint64, pattern string, count int) (uint64, []string, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return b.keyStore.Scan(ctx, cursor, pattern, count)
}

// TestSlowCommandInPipeline: a KEYS in the middle of a pipeline runs off
// the event loop: while it is held, another client of the same loop is
// served; the commands after it wait, and every reply comes in order.
func TestSlowCommandInPipeline(t *testing.T) {
	var bs *blockingScan
	_, addr := startServerTuned(t, Config{EventLoops: 1}, func(s *Server) {
		bs = &blockingScan{keyStore: s.keys, entered: make(chan struct{}, 1), release: make(chan struct{})}
		s.keys = bs
	})
	t.Cleanup(func() {
		select {
		case <-bs.release:
		default:
			close(bs.release)
		}
	})
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	if got := a.do("BF.ADD", "k", "x"); got != rawInt(1) {
		t.Fatalf("BF.ADD: %q", got)
	}
	a.send(encodeCommand("BF.ADD", "k", "a") + encodeCommand("KEYS", "*") + encodeCommand("BF.ADD", "k", "b") +
		encodeCommand("BF.EXISTS", "k", "b") + encodeCommand("PING"))
	select {
	case <-bs.entered:
	case <-time.After(rawTimeout):
		t.Fatal("KEYS never started")
	}
	// The other client is served while KEYS waits, and does not see the
	// BF.ADD queued behind it.
	for range 3 {
		if got := b.do("BF.EXISTS", "k", "b"); got != rawInt(0) {
			t.Fatalf("while KEYS is held, another client's BF.EXISTS k b: %q, want 0", got)
		}
	}
	close(bs.release)
	for i, want := range []string{rawInt(1), rawArray(rawBulk("k")), rawInt(1), rawInt(1), rawStatus("PONG")} {
		if got := a.reply(); got != want {
			t.Fatalf("reply %d of the pipeline: %q, want %q", i, got, want)
		}
	}
}

// TestSlowReader: a client that reads its replies a little at a time gets
// every byte of them, in order, however much the server had to hold back
// (partial writes, then EPOLLOUT on the event loop).
func TestSlowReader(t *testing.T) {
	_, addr := startServer(t, Config{})
	r := dialRaw(t, addr)
	const n, size = 24, 200 << 10
	var in strings.Builder
	for i := range n {
		in.WriteString(encodeCommand("ECHO", strings.Repeat(string(rune('a'+i)), size)))
	}
	go r.nc.Write([]byte(in.String())) // blocks until the server reads it all
	time.Sleep(300 * time.Millisecond) // the server's output fills the sockets meanwhile
	buf := make([]byte, 4096)
	got := 0
	want := []byte{}
	for i := range n {
		want = append(want, rawBulk(strings.Repeat(string(rune('a'+i)), size))...)
	}
	r.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	for got < len(want) {
		m, err := r.nc.Read(buf)
		if m > 0 && string(buf[:m]) != string(want[got:got+m]) {
			t.Fatalf("bytes %d…%d of the replies differ", got, got+m)
		}
		got += m
		if err != nil {
			t.Fatalf("after %d of %d bytes: %v", got, len(want), err)
		}
		if got%(1<<20) < 4096 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestManyClients: a few hundred clients at once, each with its own
// pipelines, on few loops; every reply is right, and the connections are
// counted in and out.
func TestManyClients(t *testing.T) {
	srv, addr := startServer(t, Config{EventLoops: 2})
	const clients, rounds = 300, 5
	conns := make([]*rawConn, clients)
	for i := range conns {
		conns[i] = dialRaw(t, addr)
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i, r := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "k" + strconv.Itoa(i)
			for j := range rounds {
				item := strconv.Itoa(j)
				r.send(encodeCommand("BF.ADD", key, item) + encodeCommand("BF.EXISTS", key, item) + encodeCommand("BF.CARD", key))
				for _, want := range []string{rawInt(1), rawInt(1), rawInt(int64(j + 1))} {
					r.nc.SetReadDeadline(time.Now().Add(rawTimeout))
					if got, err := readRawReply(r.br); got != want || err != nil {
						errs <- fmt.Errorf("client %d round %d: %q, %v; want %q", i, j, got, err, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := srv.stats.clients.Load(); got != clients {
		t.Errorf("connected clients %d, want %d", got, clients)
	}
	for _, r := range conns {
		r.nc.Close()
	}
	waitFor(t, "the clients to be counted out", func() bool { return srv.stats.clients.Load() == 0 })
}

// TestOffloadWakeups: many clients of one loop run slow commands (INFO)
// at once; each finishing command wakes the loop, and every client gets
// its reply.
func TestOffloadWakeups(t *testing.T) {
	_, addr := startServer(t, Config{EventLoops: 1})
	const clients = 40
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		r := dialRaw(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				r.send(encodeCommand("INFO", "clients") + encodeCommand("PING"))
				r.nc.SetReadDeadline(time.Now().Add(rawTimeout))
				info, err := readRawReply(r.br)
				if err != nil || !strings.Contains(info, "connected_clients:") {
					errs <- fmt.Errorf("client %d: INFO %q, %v", i, truncate(info, 60), err)
					return
				}
				if got, err := readRawReply(r.br); got != rawStatus("PONG") || err != nil {
					errs <- fmt.Errorf("client %d: PING after INFO %q, %v", i, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// wrappedListener hands out its connections inside another type, which
// gives the server no socket: they are served by goroutines.
type wrappedListener struct{ net.Listener }

type wrappedConn struct{ net.Conn }

func (l wrappedListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return wrappedConn{nc}, nil
}

// TestListenerKinds: a Unix socket listener is served like TCP, and a
// listener whose connections are not sockets still works, on either
// backend: a pipelined run and a lone command are answered. (A server
// with loops serves such a connection with a goroutine, which must not
// leave a lone command pending as an event loop does on the Redis
// backend.)
func TestListenerKinds(t *testing.T) {
	redis := "redis://" + redistest.Start(t).Addr()
	for _, backend := range []string{"memory", redis} {
		for _, c := range []struct {
			name   string
			listen func() (net.Listener, error)
			loop   bool // served by an event loop (in the first pass)
		}{
			{"unix", func() (net.Listener, error) { return net.Listen("unix", t.TempDir()+"/s") }, true},
			{"wrapped", func() (net.Listener, error) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				return wrappedListener{ln}, err
			}, false},
		} {
			t.Run(strings.SplitN(backend, ":", 2)[0]+"/"+c.name, func(t *testing.T) {
				checkListener(t, backend, c.name, c.listen, c.loop) // a key of its own in the shared Redis
			})
		}
	}
}

// checkListener serves backend on the listener listen makes, and checks
// that a pipelined BF.ADD and BF.EXISTS on key, then a lone BF.ADD, are
// answered, and whether the connection was served by an event loop.
func checkListener(t *testing.T, backend, key string, listen func() (net.Listener, error), loop bool) {
	srv, err := New(pathConfig(Config{Backend: backend, Dir: "-", Logger: discardLogger()}))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	nc, err := net.Dial(ln.Addr().Network(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	nc.SetReadDeadline(time.Now().Add(rawTimeout))
	for _, send := range []string{
		encodeCommand("BF.ADD", key, "a") + encodeCommand("BF.EXISTS", key, "a"),
		encodeCommand("BF.ADD", key, "b"),
	} {
		io.WriteString(nc, send)
		for range strings.Count(send, "BF.") {
			if got, err := readRawReply(br); got != rawInt(1) {
				t.Fatalf("got %q, %v; want %q", got, err, rawInt(1))
			}
		}
	}
	srv.mu.Lock()
	for sc := range srv.conns {
		if onLoop := sc.lc != nil; onLoop != (loop && haveEventLoop && !streamPass) {
			t.Errorf("served by an event loop: %v", onLoop)
		}
	}
	srv.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}
