package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SCAN, KEYS, DBSIZE and FLUSHALL over the wire on a keyspace of 10⁵
// keys. The keys are put in the keyspace directly, all holding one
// filter: the commands under test never look inside filters, and making
// 10⁵ filters would test filter creation instead.

const largeKeys = 100_000

// fillStore adds n keys prefix0, prefix1, … to m.
func fillStore(m *memstore, prefix string, n int) {
	f := sharedFilter()
	for i := range n {
		k := prefix + fmt.Sprint(i)
		unlock := m.ks.lock(k)
		m.ks.set(k, &entry{filter: f})
		m.used.Add(f.Bytes())
		unlock()
	}
}

func TestScanLargeKeyspace(t *testing.T) {
	srv, addr := startServer(t, Config{})
	m := srv.backend.(*memstore)
	fillStore(m, "key:", largeKeys)
	rdb := newClient(t, addr, 2, func(o *redis.Options) { o.ReadTimeout = time.Minute })
	ctx := context.Background()

	keys, cursor, err := rdb.Scan(ctx, 0, "", 10).Result()
	if err != nil || len(keys) == 0 || len(keys) > 10 || cursor == 0 {
		t.Fatalf("SCAN 0 COUNT 10: %d keys, cursor %d, %v; want up to 10 and a cursor", len(keys), cursor, err)
	}
	keys, cursor, err = rdb.Scan(ctx, 0, "nomatch*", 10).Result()
	if err != nil || len(keys) != 0 || cursor == 0 {
		t.Fatalf("SCAN 0 MATCH nomatch* COUNT 10: %d keys, cursor %d, %v; want none and a cursor", len(keys), cursor, err)
	}
	// MATCH does not extend a call's walk: a whole scan takes a call per
	// COUNT keys.
	calls := 0
	for cursor = 0; ; {
		keys, cursor, err = rdb.Scan(ctx, cursor, "nomatch*", 100).Result()
		calls++
		if err != nil || len(keys) != 0 {
			t.Fatalf("SCAN MATCH nomatch*: %q, %v", keys, err)
		}
		if cursor == 0 {
			break
		}
	}
	if calls < largeKeys/100 {
		t.Fatalf("SCAN MATCH nomatch* COUNT 100 walked %d keys in %d calls", largeKeys, calls)
	}

	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != largeKeys {
		t.Fatalf("DBSIZE %d, %v", n, err)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 0 || m.used.Load() != 0 {
		t.Fatalf("after FLUSHALL: DBSIZE %d, %d filter bytes counted", n, m.used.Load())
	}
}

// TestScanUnderChurn: a whole SCAN returns every key that was there
// throughout while other clients delete and rename keys (a rename is a
// deletion and an insertion).
func TestScanUnderChurn(t *testing.T) {
	srv, addr := startServer(t, Config{})
	m := srv.backend.(*memstore)
	fillStore(m, "key:", largeKeys)
	const churn = 50_000
	fillStore(m, "churn:", churn)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 2 {
		rdb := newClient(t, addr, 2)
		wg.Go(func() {
			for i := g; i < churn; i += 2 {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprint("churn:", i)
				var err error
				if i%4 < 2 {
					err = rdb.Rename(ctx, k, fmt.Sprint("new:", i)).Err()
				} else {
					err = rdb.Del(ctx, k).Err()
				}
				if err != nil {
					t.Errorf("churn: %v", err)
					return
				}
			}
		})
	}
	rdb := newClient(t, addr, 2)
	seen := make(map[string]bool, largeKeys+churn)
	for cursor := uint64(0); ; {
		keys, next, err := rdb.Scan(ctx, cursor, "", 200).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	close(stop)
	wg.Wait()
	for i := range largeKeys {
		if k := fmt.Sprint("key:", i); !seen[k] {
			t.Fatalf("%s, present for the whole scan, was not returned", k)
		}
	}
}

// TestKeysPathologicalPattern: patterns that are exponential for a
// naive matcher, or re-read a huge class for every byte, finish (the
// client's timeout guards against a hang; the time is in
// BenchmarkKeyspace1M) and answer as Redis would.
func TestKeysPathologicalPattern(t *testing.T) {
	srv, addr := startServer(t, Config{})
	fillStore(srv.backend.(*memstore), "key:", largeKeys)
	fillStore(srv.backend.(*memstore), strings.Repeat("a", 60), 10) // many partial matches of *a*a…
	rdb := newClient(t, addr, 2, func(o *redis.Options) { o.ReadTimeout = time.Minute })
	ctx := context.Background()
	huge := strings.Repeat("y", 100<<10)
	for _, tc := range []struct {
		pattern string
		want    int
	}{
		{"*[" + huge, 0},                 // an unterminated class of 100 KB, ending every key: none
		{"*[" + huge + "k]*", largeKeys}, // a 100 KB class holding k, anywhere: every key:…
		{strings.Repeat("*a", 40) + "*b", 0},
		{strings.Repeat("*k", 5000) + "*x", 0},
		{"*" + strings.Repeat("?", 2000) + "*", 0},                 // longer than every key
		{"k" + strings.Repeat("*", 100<<10) + "9", largeKeys / 10}, // a run of stars
		{strings.Repeat("[a-z]", 3) + ":" + strings.Repeat("*", 10), largeKeys},
	} {
		keys, err := rdb.Keys(ctx, tc.pattern).Result()
		if err != nil || len(keys) != tc.want {
			t.Errorf("KEYS %.40q…: %d keys, %v; want %d", tc.pattern, len(keys), err, tc.want)
		}
	}
}

// slowScan is a backend whose Scan takes a while and is counted, to see
// when KEYS and SCAN stop.
type slowScan struct {
	keyStore
	calls atomic.Int64
}

func (s *slowScan) Scan(ctx context.Context, cursor uint64, pattern string, count int) (uint64, []string, error) {
	s.calls.Add(1)
	time.Sleep(2 * time.Millisecond)
	return s.keyStore.Scan(ctx, cursor, pattern, count)
}

// TestLongCommandStopsWhenClientGone: KEYS, and SCAN with a huge COUNT,
// stop between batches once their client has closed the connection, and
// run to the end for a client that stays.
func TestLongCommandStopsWhenClientGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux tells a closed peer without reading (conn_alive_linux.go)")
	}
	srv, err := New(pathConfig(Config{Dir: "-", Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	if err != nil {
		t.Fatal(err)
	}
	fillStore(srv.backend.(*memstore), "key:", largeKeys)
	slow := &slowScan{keyStore: srv.keys}
	srv.keys = slow
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	addr := ln.Addr().String()

	for _, cmd := range []string{"KEYS *", "SCAN 0 COUNT 100000000"} {
		before := slow.calls.Load()
		r := dialRaw(t, addr)
		r.send(encodeCommand(strings.Fields(cmd)...))
		r.nc.Close()
		calls := settle(&slow.calls)
		if calls-before > 20 { // a whole walk is over 100 batches
			t.Errorf("%s went on for %d batches after its client closed the connection", cmd, calls-before)
		}
	}
	rdb := newClient(t, addr, 2, func(o *redis.Options) { o.ReadTimeout = time.Minute })
	if keys, err := rdb.Keys(context.Background(), "*").Result(); err != nil || len(keys) != largeKeys {
		t.Fatalf("KEYS * from a client that stays: %d keys, %v", len(keys), err)
	}
}

// settle waits until n stops changing for a while and returns it.
func settle(n *atomic.Int64) int64 {
	last := n.Load()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		cur := n.Load()
		if cur == last {
			return cur
		}
		last = cur
	}
	return last
}
