package redisfilter

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestStreamAuthAndDatabase: a stream's connection authenticates and
// selects the client's database as go-redis's do: mirrored writes of a
// client with a username, a password and database 3 reach that
// database, sent on the stream.
func TestStreamAuthAndDatabase(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	if err := redis.NewClient(&redis.Options{Addr: srv.Addr()}).ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "s3cret"})
	t.Cleanup(func() { admin.Close() })
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">apppass", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*redis.Options{
		{Addr: srv.Addr(), Password: "s3cret", DB: 3},
		{Addr: srv.Addr(), Username: "app", Password: "apppass", DB: 3},
		{Addr: srv.Addr(), DB: 3, CredentialsProvider: func() (string, string) { return "app", "apppass" }},
	} {
		c := redis.NewClient(o)
		budget := NewMirrors(64 << 20)
		s := mustCreateScalable(t, c, "authed", 100000, 0.001, bloom.Growth{}, WithMirrors(budget))
		if budget.streamFor(c) == nil {
			t.Fatal("no stream for a single-node client")
		}
		for round := range 3 {
			if _, err := s.AddMany(ctx, items("a"+string(rune('0'+round)), 0, 200)); err != nil {
				t.Fatal(err)
			}
		}
		if st := budget.Stats(); st.Loads != 1 || st.Bytes == 0 || st.Conflicts != 0 {
			t.Fatalf("stats %+v: the mirrored writes did not go through", st)
		}
		allPresent(t, s, items("a2", 0, 200))
		if n, err := admin.Do(ctx, "SELECT", "3").Result(); err != nil || n != "OK" {
			t.Fatal(n, err)
		}
		if err := s.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		budget.Close()
		c.Close()
	}
}

// TestStreamBroken: a stream whose connection is killed (between writes,
// or with writes in flight) costs no item. A write in flight whose reply
// is lost fails with an error (it may or may not have run, as after any
// network error); added again, its items are present; the next mirrored
// write dials again.
func TestStreamBroken(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	budget := NewMirrors(64 << 20)
	s := mustCreateScalable(t, c, "broken", 200000, 0.001, bloom.Growth{}, WithMirrors(budget))
	killer := redis.NewClient(&redis.Options{Addr: c.Options().Addr})
	t.Cleanup(func() { killer.Close() })
	streamConns := func() []string {
		list, err := killer.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, "cmd=exec") {
				id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
				ids = append(ids, id)
			}
		}
		return ids
	}
	var all [][]byte
	killed, streamErrs := 0, 0
	for round := range 20 {
		batch := items("r"+string(rune('a'+round))+"-", 0, 300)
		all = append(all, batch...)
		done := make(chan error, 1)
		go func() {
			_, err := s.AddMany(ctx, batch)
			done <- err
		}()
		if round%4 == 1 {
			for _, id := range streamConns() {
				if killer.Do(ctx, "CLIENT", "KILL", "ID", id).Err() == nil {
					killed++
				}
			}
		}
		if err := <-done; err != nil {
			// Killed: the stream's write in flight (errStream, also the
			// next round's, sent before the stream saw the close), or one
			// of go-redis's connections (its pooled connections die too).
			if round%4 != 1 && round%4 != 2 {
				t.Fatalf("round %d: %v", round, err)
			}
			streamErrs += b2i(errors.Is(err, errStream))
			if _, err := s.AddMany(ctx, batch); err != nil { // the client's retry
				t.Fatalf("round %d, again: %v", round, err)
			}
		}
	}
	allPresent(t, s, all)
	t.Logf("%d connections killed, %d stream writes failed in flight", killed, streamErrs)
	if killed == 0 {
		t.Fatal("no connection killed: the test did not break the stream")
	}
	// Past the copies' pause, a copy is loaded again and its writes go
	// on a new connection.
	s.mirMu.Lock()
	s.mirOff = time.Time{}
	s.mirMu.Unlock()
	last := items("last-", 0, 300)
	if _, err := s.AddMany(ctx, last); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMany(ctx, items("last2-", 0, 300)); err != nil {
		t.Fatal(err)
	}
	st := budget.streamFor(c)
	st.mu.Lock()
	dials := st.dials
	st.mu.Unlock()
	if stats := budget.Stats(); dials < 2 || !s.Mirrored() || stats.Conflicts != 0 {
		t.Fatalf("%d dials, stats %+v: want the stream dialed again, a copy, no conflict", dials, stats)
	}
	allPresent(t, s, last)
	// A reply out of shape breaks the connection, not the process.
	var r txReply
	r.sets = 1
	if err := r.parse(bufio.NewReader(strings.NewReader("+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n"))); err == nil {
		t.Fatal("an EXEC reply of 2 for 3 commands parsed")
	}
}

// FuzzTxReplyParse: any bytes from a Redis parse to a reply or an error,
// never a panic.
func FuzzTxReplyParse(f *testing.F) {
	f.Add(1, []byte("+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n*2\r\n:0\r\n:5\r\n:64\r\n:0\r\n"))
	f.Add(2, []byte("+OK\r\n+QUEUED\r\n-ERR x\r\n+QUEUED\r\n+QUEUED\r\n-EXECABORT y\r\n"))
	f.Add(0, []byte("+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n-WRONGTYPE z\r\n:0\r\n"))
	f.Fuzz(func(t *testing.T, sets int, data []byte) {
		if sets < 0 || sets > 1000 {
			return
		}
		r := txReply{sets: sets}
		err := r.parse(bufio.NewReader(strings.NewReader(string(data))))
		if err == nil && r.err == nil && r.gateEr == nil && r.gate == nil {
			t.Fatalf("%q parsed to no gate reply and no error", data)
		}
	})
}

// heldConn hands a stream's reader the reply in the parts the test sends,
// whatever Close did (as bytes already received would be).
type heldConn struct {
	net.Conn
	parts chan []byte
}

func (h *heldConn) Read(p []byte) (int, error) {
	b, ok := <-h.parts
	if !ok {
		return 0, io.EOF
	}
	return copy(p, b), nil
}
func (h *heldConn) Write(p []byte) (int, error)      { return len(p), nil }
func (h *heldConn) Close() error                     { return nil }
func (h *heldConn) SetReadDeadline(time.Time) error  { return nil }
func (h *heldConn) SetWriteDeadline(time.Time) error { return nil }

// TestStreamFailWhileParsing: a connection that breaks (a failed write
// elsewhere, Close) while its reader is parsing a reply answers the
// write in flight with the error once; the reader, finishing the reply,
// then stops (it used to pop an emptied queue and panic).
func TestStreamFailWhileParsing(t *testing.T) {
	h := &heldConn{parts: make(chan []byte)}
	sc := &streamConn{c: h, rd: bufio.NewReader(h)}
	r := &txReply{sets: 1, done: make(chan struct{})}
	sc.queue = []*txReply{r}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc.read(0)
	}()
	h.parts <- []byte("+OK\r\n+QUEUED\r\n") // the reader parses it, then waits for more
	broken := errors.New("broken meanwhile")
	sc.fail(broken)
	h.parts <- []byte("+QUEUED\r\n+QUEUED\r\n*3\r\n*2\r\n:0\r\n:1\r\n:0\r\n:0\r\n")
	close(h.parts)
	<-exited
	<-r.done
	if r.err != broken {
		t.Fatalf("the write in flight got %v, want the break's error", r.err)
	}
}

// TestStreamOnlyForPlainClients: only a single-node client gets a
// stream; a Sentinel client (a *redis.Client whose dialer asks the
// sentinels) keeps go-redis, whose connections a failover closes, as do
// Cluster clients and clients with an OnConnect hook.
func TestStreamOnlyForPlainClients(t *testing.T) {
	for _, c := range []struct {
		name   string
		client redis.UniversalClient
		want   bool
	}{
		{"single", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), true},
		{"sentinel", redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}}), false},
		{"cluster", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), false},
		{"onconnect", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", OnConnect: func(context.Context, *redis.Conn) error { return nil }}), false},
	} {
		if got := streamFor(c.client) != nil; got != c.want {
			t.Errorf("%s: stream %v, want %v", c.name, got, c.want)
		}
		c.client.Close()
	}
}

// timeoutErr is a read deadline passing.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// idleConn's first read times out (a read deadline passing with nothing
// in flight); then it hands out the parts the test sends.
type idleConn struct {
	heldConn
	timedOut atomic.Bool
}

func (c *idleConn) Read(p []byte) (int, error) {
	if c.timedOut.CompareAndSwap(false, true) {
		return 0, timeoutErr{}
	}
	return c.heldConn.Read(p)
}

// TestStreamIdleDeadline: a read deadline that passes with nothing in
// flight does not break the connection: the next write's reply is read.
func TestStreamIdleDeadline(t *testing.T) {
	c := &idleConn{heldConn: heldConn{parts: make(chan []byte)}}
	sc := &streamConn{c: c, rd: bufio.NewReader(c)}
	go sc.read(time.Second)
	r := &txReply{sets: 0, done: make(chan struct{})}
	for !c.timedOut.Load() {
		time.Sleep(time.Millisecond)
	}
	sc.mu.Lock()
	sc.queue = append(sc.queue, r)
	sc.mu.Unlock()
	select {
	case c.parts <- []byte("+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n*2\r\n:0\r\n:1\r\n:0\r\n"):
	case <-r.done: // answered by a failure, without reading
	case <-time.After(5 * time.Second):
		t.Fatal("the reader stopped reading after an idle deadline")
	}
	<-r.done
	if r.err != nil || len(r.gate) != 2 {
		t.Fatalf("after an idle deadline: reply %+v, err %v", r.gate, r.err)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.err != nil {
		t.Fatalf("the idle deadline broke the connection: %v", sc.err)
	}
}
