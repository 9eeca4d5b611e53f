package redisbench

import (
	"context"
	"strconv"
	"testing"

	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// BenchmarkRedisCuckoo measures redisfilter.Cuckoo's batched calls
// against a local redis-server that it starts: AddMany into a filter of
// capacity 2·2²⁰ (no growth), and TestMany of items half present
// (the first half of the pool, added first), half absent, in batches of 1000 from one goroutine (one script call each).
// Besides ns per item it reports the items per second and the server's
// CPU per item (INFO cpu: script execution plus reading and replying),
// which bounds what one Redis core serves.
//
//	cd bench && go test ./redisbench -run '^$' -bench RedisCuckoo -benchtime 1000000x
func BenchmarkRedisCuckoo(b *testing.B) {
	srv, err := StartRedis("redis-server")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	const batch = 1000
	pool := make([][]byte, 1<<20)
	for i := range pool {
		pool[i] = []byte("item:" + strconv.Itoa(i))
	}
	for _, op := range []string{"AddMany", "TestMany"} {
		b.Run(op+"/batch1000", func(b *testing.B) {
			client.FlushAll(ctx)
			c, err := redisfilter.CreateCuckoo(ctx, client, "cf", 2<<20)
			if err != nil {
				b.Fatal(err)
			}
			if op == "TestMany" { // the first half of the pool present
				if _, err := c.AddMany(ctx, pool[:len(pool)/2]); err != nil {
					b.Fatal(err)
				}
			}
			before, err := ReadRedisStats(ctx, client)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				from := done % (len(pool) - batch)
				items := pool[from : from+min(batch, b.N-done)]
				if op == "AddMany" {
					_, err = c.AddMany(ctx, items)
				} else {
					_, err = c.TestMany(ctx, items)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after, err := ReadRedisStats(ctx, client)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
			b.ReportMetric(float64((after.CPU-before.CPU).Nanoseconds())/float64(b.N), "server-ns/item")
		})
	}
}
