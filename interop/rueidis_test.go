package interop

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/bloomery/bloom/server"
	"github.com/redis/rueidis"
)

// rueidis, the second official Go client for Redis, against bloomery
// serve: NewClient with its default options (RESP3, client-side caching
// with CLIENT TRACKING ON OPTIN, a cluster probe first, CLIENT SETINFO)
// must connect, run the Bloom filter commands through its typed builder,
// and serve a cached BF.EXISTS until another connection's write
// invalidates it.

// startBloomery runs a bloomery server (memory backend, nothing on disk)
// on a loopback port until the test ends, and returns its address.
func startBloomery(t *testing.T, cfg server.Config) string {
	t.Helper()
	cfg.Addr, cfg.Dir = "127.0.0.1:0", "-"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return ln.Addr().String()
}

func TestRueidisDefaultClient(t *testing.T) {
	for name, cfg := range map[string]server.Config{"event loops": {}, "goroutine per conn": {GoroutinePerConn: true}} {
		t.Run(name, func(t *testing.T) {
			addr := startBloomery(t, cfg)
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
			if err != nil {
				t.Fatalf("NewClient with default options: %v", err)
			}
			defer c.Close()
			ctx := context.Background()
			ok := func(what string, r rueidis.RedisResult) {
				t.Helper()
				if err := r.Error(); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			ok("BF.RESERVE", c.Do(ctx, c.B().BfReserve().Key("k").ErrorRate(0.001).Capacity(1000).Build()))
			if added, err := c.Do(ctx, c.B().BfAdd().Key("k").Item("a").Build()).AsBool(); err != nil || !added {
				t.Fatalf("BF.ADD: %v %v", added, err)
			}
			if got, err := c.Do(ctx, c.B().BfMadd().Key("k").Item("b", "c", "a").Build()).AsBoolSlice(); err != nil ||
				len(got) != 3 || !got[0] || !got[1] || got[2] {
				t.Fatalf("BF.MADD: %v %v", got, err)
			}
			if got, err := c.Do(ctx, c.B().BfInsert().Key("i").Capacity(50).Items().Item("x", "y").Build()).AsBoolSlice(); err != nil || len(got) != 2 {
				t.Fatalf("BF.INSERT: %v %v", got, err)
			}
			if n, err := c.Do(ctx, c.B().BfCard().Key("k").Build()).AsInt64(); err != nil || n != 3 {
				t.Fatalf("BF.CARD: %d %v", n, err)
			}
			if info, err := c.Do(ctx, c.B().BfInfo().Key("k").Build()).AsIntMap(); err != nil || info["Capacity"] != 1000 {
				t.Fatalf("BF.INFO: %v %v", info, err)
			}
			dumpAndReload(t, c, "k", "copy")
			if got, err := c.Do(ctx, c.B().BfMexists().Key("copy").Item("a", "b", "c").Build()).AsBoolSlice(); err != nil ||
				len(got) != 3 || !got[0] || !got[1] || !got[2] {
				t.Fatalf("BF.MEXISTS of the reloaded filter: %v %v", got, err)
			}
			cachedExists(t, c, addr)
		})
	}
}

// dumpAndReload copies src to dst through BF.SCANDUMP and BF.LOADCHUNK.
func dumpAndReload(t *testing.T, c rueidis.Client, src, dst string) {
	t.Helper()
	ctx := context.Background()
	for it := int64(0); ; {
		chunk, err := c.Do(ctx, c.B().BfScandump().Key(src).Iterator(it).Build()).ToArray()
		if err != nil || len(chunk) != 2 {
			t.Fatalf("BF.SCANDUMP %d: %v %v", it, chunk, err)
		}
		if it, err = chunk[0].AsInt64(); err != nil {
			t.Fatal(err)
		}
		if it == 0 {
			return
		}
		data, err := chunk[1].ToString()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, c.B().BfLoadchunk().Key(dst).Iterator(it).Data(data).Build()).Error(); err != nil {
			t.Fatalf("BF.LOADCHUNK %d: %v", it, err)
		}
	}
}

// cachedExists: a BF.EXISTS read through rueidis's cache is served from
// it until another client's BF.ADD of the item invalidates it.
func cachedExists(t *testing.T, c rueidis.Client, addr string) {
	t.Helper()
	ctx := context.Background()
	read := func() rueidis.RedisResult {
		return c.DoCache(ctx, c.B().BfExists().Key("cached").Item("z").Cache(), time.Minute)
	}
	if v, err := read().AsBool(); err != nil || v {
		t.Fatalf("first cached BF.EXISTS: %v %v", v, err)
	}
	if r := read(); !r.IsCacheHit() {
		t.Fatal("the second BF.EXISTS was not served from rueidis's cache")
	}
	other, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Do(ctx, other.B().BfAdd().Key("cached").Item("z").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if v, err := read().AsBool(); err == nil && v {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("BF.EXISTS still false from the cache after %d reads, 10 s after another client added the item", i)
		}
		time.Sleep(time.Duration(min(i, 20)) * time.Millisecond)
	}
}
