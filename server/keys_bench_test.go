package server

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkKeyspace1M compares SCAN and KEYS on 10⁶ keys (key:0 …
// key:999999) between bloomery serve (in this process, the keys put in
// its keyspace directly, all holding one filter) and redis-server 7.0
// (DEBUG POPULATE), through the same go-redis client:
//
//   - scan-count10: one SCAN call with COUNT 10, the cursor carried on
//     from the previous call (ns/op is the latency of a call);
//   - scan-nomatch-count10: the same with MATCH nomatch*;
//   - scan-all-count1000: a whole scan with COUNT 1000;
//   - keys-class1k: KEYS *[ followed by a 1 KB unterminated class (no
//     key matches: a matcher that re-reads the class for every byte
//     tested does 10 KB of work per key);
//   - keys-class100k: the same with 100 KB, bloomery only (redis-server
//     takes 35 s on 20,000 keys, about half an hour on 10⁶).
//
// go test ./server -run '^$' -bench Keyspace1M -benchtime 2000x for the
// SCAN cases (and -benchtime 3x for the others).
func BenchmarkKeyspace1M(b *testing.B) {
	const n = 1_000_000
	srv, addr := startServer(b, Config{})
	fillStore(srv.backend.(*memstore), "key:", n)
	red := redistest.Start(b, "--enable-debug-command", "yes")
	ctx := context.Background()
	opts := func(o *redis.Options) { o.ReadTimeout = 5 * time.Minute }
	clients := []struct {
		name string
		rdb  *redis.Client
	}{
		{"bloomery", newClient(b, addr, 2, opts)},
		{"redis", newClient(b, red.Addr(), 2, opts)},
	}
	if err := clients[1].rdb.Do(ctx, "DEBUG", "POPULATE", n, "key").Err(); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	for _, c := range clients {
		if got, err := c.rdb.DBSize(ctx).Result(); err != nil || got != n {
			b.Fatalf("%s: DBSIZE %d, %v", c.name, got, err)
		}
		b.Run(c.name+"/scan-count10", func(b *testing.B) { benchScanCalls(b, c.rdb, "", 10) })
		b.Run(c.name+"/scan-nomatch-count10", func(b *testing.B) { benchScanCalls(b, c.rdb, "nomatch*", 10) })
		b.Run(c.name+"/scan-all-count1000", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				keys := 0
				for cursor := uint64(0); ; {
					ks, next, err := c.rdb.Scan(ctx, cursor, "", 1000).Result()
					if err != nil {
						b.Fatal(err)
					}
					keys += len(ks)
					if cursor = next; cursor == 0 {
						break
					}
				}
				if keys < n {
					b.Fatalf("a whole scan returned %d keys", keys)
				}
			}
		})
		for _, class := range []int{1 << 10, 100 << 10} {
			if class > 1<<10 && c.name == "redis" {
				continue
			}
			pattern := "*[" + strings.Repeat("y", class)
			b.Run(fmt.Sprintf("%s/keys-class%dk", c.name, class>>10), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if keys, err := c.rdb.Keys(ctx, pattern).Result(); err != nil || len(keys) != 0 {
						b.Fatalf("KEYS: %d keys, %v", len(keys), err)
					}
				}
			})
		}
	}
}

// benchScanCalls times single SCAN calls, each going on from the
// previous call's cursor, and reports the keys returned per call.
func benchScanCalls(b *testing.B, rdb *redis.Client, match string, count int64) {
	ctx := context.Background()
	b.ReportAllocs()
	cursor, keys := uint64(0), 0
	for b.Loop() {
		ks, next, err := rdb.Scan(ctx, cursor, match, count).Result()
		if err != nil {
			b.Fatal(err)
		}
		keys += len(ks)
		cursor = next
	}
	b.ReportMetric(float64(keys)/float64(b.N), "keys/call")
}

// BenchmarkKeyspaceMemory reports the keyspace's own bytes per key
// (slot, index cell, entry; the key's bytes excluded), for 10⁶ keys
// without and with an expiry.
func BenchmarkKeyspaceMemory(b *testing.B) {
	const n = 1_000_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint("k:", i)
	}
	f := sharedFilter()
	for _, exp := range []int64{0, 1 << 60} {
		b.Run(fmt.Sprintf("expiry=%v", exp != 0), func(b *testing.B) {
			for b.Loop() {
				before := heapBytes()
				ks := newKeyspace(time.Now)
				for _, k := range keys {
					ks.set(k, &entry{filter: f, expireAt: exp})
				}
				b.ReportMetric(float64(heapBytes()-before)/n, "bytes/key")
				runtime.KeepAlive(ks)
			}
		})
	}
}

// heapBytes is the live heap after collections.
func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
