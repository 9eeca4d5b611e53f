package redisfilter

import (
	"bufio"
	"context"
	"strings"
	"testing"

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
// or with writes in flight) costs no item: the writes in flight go again
// as watched writes, and the next mirrored write dials again.
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
	killed := 0
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
			t.Fatalf("round %d: %v", round, err)
		}
	}
	allPresent(t, s, all)
	if killed == 0 || budget.Stats().Loads < 2 {
		t.Fatalf("%d connections killed, %d copies loaded: the test did not break the stream", killed, budget.Stats().Loads)
	}
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
