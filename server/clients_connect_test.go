package server

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Real clients as their users make them, with their default options: what
// they send while they set a connection up must succeed, and their Bloom
// filter commands must work. go-redis here, redis-py (Debian's
// python3-redis) through a script; rueidis, which is not a dependency of
// this module, in interop/; redis-cli in cli_test.go.

// TestGoRedisDefaultOptions: go-redis v9 with nothing but an address
// (RESP3, maintenance notifications in auto mode, CLIENT SETINFO), and
// with RESP2, fills, dumps and reloads a filter.
func TestGoRedisDefaultOptions(t *testing.T) {
	_, addr := startServer(t, Config{})
	ctx := context.Background()
	for _, proto := range []int{0, 2} {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto})
		t.Cleanup(func() { c.Close() })
		src, dst := "src"+string(rune('0'+proto)), "dst"+string(rune('0'+proto))
		if err := c.BFReserve(ctx, src, 0.001, 1000).Err(); err != nil {
			t.Fatalf("RESP %d: first command: %v", proto, err)
		}
		if r, err := c.BFMAdd(ctx, src, "a", "b", "c").Result(); err != nil || len(r) != 3 || !r[0] {
			t.Fatalf("BFMAdd: %v %v", r, err)
		}
		for it := int64(0); ; {
			chunk, err := c.BFScanDump(ctx, src, it).Result()
			if err != nil {
				t.Fatalf("BFScanDump: %v", err)
			}
			if chunk.Iter == 0 {
				break
			}
			if err := c.BFLoadChunk(ctx, dst, chunk.Iter, chunk.Data).Err(); err != nil {
				t.Fatalf("BFLoadChunk: %v", err)
			}
			it = chunk.Iter
		}
		if r, err := c.BFMExists(ctx, dst, "a", "b", "c").Result(); err != nil || !r[0] || !r[1] || !r[2] {
			t.Fatalf("the reloaded filter: %v %v", r, err)
		}
		info, err := c.BFInfo(ctx, dst).Result()
		if err != nil || info.Capacity != 1000 || info.ItemsInserted != 3 {
			t.Fatalf("BFInfo of the reloaded filter: %+v %v", info, err)
		}
		lib, err := c.ClientInfo(ctx).Result()
		if err != nil || !strings.HasPrefix(lib.LibName, "go-redis") {
			t.Fatalf("CLIENT INFO: %+v %v; want the lib-name go-redis set with CLIENT SETINFO", lib, err)
		}
	}
}

// TestGoRedisClientSideCache: go-redis's client-side cache (tracking in
// the default mode) serves EXISTS from its cache, and drops it when
// another client's BF.ADD creates the key.
func TestGoRedisClientSideCache(t *testing.T) {
	srv, addr := startServer(t, Config{})
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, ClientSideCacheConfig: &redis.ClientSideCacheConfig{}})
	t.Cleanup(func() { c.Close() })
	w := newClient(t, addr, 2)
	for range 2 {
		if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
			t.Fatalf("EXISTS k: %d %v", n, err)
		}
	}
	srv.track.mu.Lock()
	tracked := len(srv.track.keys["k"])
	srv.track.mu.Unlock()
	if tracked != 1 {
		t.Fatalf("%d clients tracked k after go-redis's cached EXISTS, want 1: go-redis did not turn tracking on", tracked)
	}
	w.BFAdd(ctx, "k", "a")
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := c.Exists(ctx, "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("EXISTS k still answers 0 from the cache 10 s after another client created k")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pythonWithRedis returns a Python 3 that imports redis (redis-py), or
// fails the test: it is a dependency of the tests (scripts/install-deps
// installs Debian's python3-redis, for /usr/bin/python3).
func pythonWithRedis(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import redis").Run() == nil {
			return path
		}
	}
	t.Fatal("no python3 with redis-py (import redis): run scripts/install-deps (Debian's python3-redis)")
	return ""
}

// TestRedisPy runs testdata/clients/redispy_bf.py: redis-py's Bloom
// filter API (create, add, madd, exists, mexists, insert, info, card,
// scandump and loadchunk), and what redis-py's users read at setup (INFO
// cluster, MODULE LIST), on a default connection.
func TestRedisPy(t *testing.T) {
	py := pythonWithRedis(t)
	for name, cfg := range map[string]Config{"event loops": {}, "goroutine per conn": {GoroutinePerConn: true}} {
		t.Run(name, func(t *testing.T) {
			_, addr := startServer(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, py, filepath.Join("testdata", "clients", "redispy_bf.py"), addr).CombinedOutput()
			if err != nil || !strings.HasSuffix(string(out), "ok\n") {
				t.Fatalf("redispy_bf.py: %v\n%s", err, out)
			}
		})
	}
}
