package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Helpers of the persistence tests: a server on a data directory with a
// go-redis client, crash images, and what a client sees of the keys.

// pServer is a server with a data directory and a go-redis client on it.
type pServer struct {
	srv  *Server
	rdb  *redis.Client
	addr string
	dir  string
	logs *pLogBuffer
	done bool
}

// pLogBuffer collects a server's log lines.
type pLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (lb *pLogBuffer) Write(p []byte) (int, error) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.b.Write(p)
}

func (lb *pLogBuffer) String() string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.b.String()
}

// newPServer opens a server on cfg.Dir (New's error is returned, for the
// tests of failing starts), each tune applied before it serves.
func newPServer(t testing.TB, cfg Config, tune ...func(*Server)) (*pServer, error) {
	t.Helper()
	logs := &pLogBuffer{}
	cfg.Addr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := New(pathConfig(cfg))
	if err != nil {
		return nil, err
	}
	for _, f := range tune {
		f(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	ps := &pServer{srv: srv, addr: ln.Addr().String(), dir: cfg.Dir, logs: logs,
		rdb: redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2, MaxRetries: -1})}
	t.Cleanup(func() { ps.shutdown(t) })
	return ps, nil
}

// startPServer opens a server on cfg.Dir or fails the test.
func startPServer(t testing.TB, cfg Config, tune ...func(*Server)) *pServer {
	t.Helper()
	ps, err := newPServer(t, cfg, tune...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ps
}

// shutdown stops the server gracefully (final snapshot).
func (ps *pServer) shutdown(t testing.TB) {
	t.Helper()
	if ps.done {
		return
	}
	ps.done = true
	ps.rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ps.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// do runs a command that must succeed.
func (ps *pServer) do(t testing.TB, args ...any) any {
	t.Helper()
	v, err := ps.rdb.Do(context.Background(), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// info returns INFO persistence's fields.
func (ps *pServer) info(t testing.TB) map[string]string {
	t.Helper()
	return ps.infoSection(t, "persistence")
}

// infoSection returns the fields of INFO's section sec.
func (ps *pServer) infoSection(t testing.TB, sec string) map[string]string {
	t.Helper()
	return redisInfo(t, ps.rdb, sec)
}

// redisInfo returns the fields of INFO's section sec, through c.
func redisInfo(t testing.TB, c *redis.Client, sec string) map[string]string {
	t.Helper()
	s, err := c.Info(context.Background(), sec).Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// copyDataDir copies dir's files (a crash image while the server runs:
// what the OS has, written but maybe not fsynced).
func copyDataDir(t testing.TB, dir string) string {
	t.Helper()
	dst := t.TempDir()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, de.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// dirNames lists dir's file names, sorted.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	slices.Sort(names)
	return names
}

// pKeyState is what a client sees of a key.
type pKeyState struct {
	info     string // BF.INFO
	expireAt int64  // PEXPIRETIME
}

// state is every key's pKeyState.
func (ps *pServer) state(t testing.TB) map[string]pKeyState {
	t.Helper()
	ctx := context.Background()
	keys, err := ps.rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]pKeyState{}
	for _, k := range keys {
		var info string
		if strings.HasPrefix(k, "cf:") { // a cuckoo filter: its counters and every byte
			info = fmt.Sprint(ps.do(t, "CF.INFO", k), cuckooDump(t, ps, k))
		} else {
			info = fmt.Sprint(ps.do(t, "BF.INFO", k))
		}
		st[k] = pKeyState{info: info, expireAt: ps.do(t, "PEXPIRETIME", k).(int64)}
	}
	return st
}

// cuckooDump is key's CF.SCANDUMP, all chunks.
func cuckooDump(t testing.TB, ps *pServer, key string) string {
	return scanDump(t, ps, "CF.SCANDUMP", key)
}

// scanDump is every chunk of key's dump by verb (BF.SCANDUMP or
// CF.SCANDUMP).
func scanDump(t testing.TB, ps *pServer, verb, key string) string {
	var b strings.Builder
	for it := int64(0); ; {
		r := ps.do(t, verb, key, it).([]any)
		if it = r[0].(int64); it == 0 {
			return b.String()
		}
		fmt.Fprint(&b, r[1])
	}
}

// items returns n distinct items with a prefix.
func pItems(prefix string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// assertPresent checks that every item answers BF.EXISTS 1.
func (ps *pServer) assertPresent(t testing.TB, key string, its []any) {
	t.Helper()
	for len(its) > 0 {
		n := min(len(its), 1000)
		cmd := "BF.MEXISTS"
		if strings.HasPrefix(key, "cf:") {
			cmd = "CF.MEXISTS"
		}
		got := ps.do(t, append([]any{cmd, key}, its[:n]...)...).([]any)
		for i, v := range got {
			if v != int64(1) {
				t.Fatalf("%s: item %v is missing after restart", key, its[i])
			}
		}
		its = its[n:]
	}
}

// assertSameState checks that after has the state before had and every item.
func assertSameState(t testing.TB, before map[string]pKeyState, after *pServer, want map[string][]any) {
	t.Helper()
	got := after.state(t)
	for k, st := range before {
		if got[k] != st {
			t.Errorf("key %s: after restart %+v, before %+v", k, got[k], st)
		}
	}
	for k := range got {
		if _, ok := before[k]; !ok {
			t.Errorf("key %s appeared after restart", k)
		}
	}
	for k, its := range want {
		after.assertPresent(t, k, its)
	}
}

// testCommands is a command table for stores made without a server (the
// replayer runs log records through it).
func testCommands() table { return newTable(newMetrics(&Server{}, 1)) }

// untilStop runs body(0), body(1), … on a goroutine counted in wg until
// stop is closed or body returns false: the writers of the concurrency
// tests.
func untilStop(wg *sync.WaitGroup, stop <-chan struct{}, body func(i int) bool) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if !body(i) {
				return
			}
		}
	}()
}
