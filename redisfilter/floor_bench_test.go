package redisfilter

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkRedisFloor measures what Redis alone costs per item for the
// fewest core commands that a test or an add of a blocked filter needs,
// on a filter's 26 MB bitmap (2·10⁷ items at p = 0.005, k = 7, the
// servebench filter's sub-filter of docs/BENCHMARKS.md), pipelined in
// batches of 400 random items from one client:
//
//   - getrange: a GETRANGE of the item's 64-byte block (a test);
//   - getrange+setrange: that and a SETRANGE of the block (an add; a
//     watched write adds a WATCH and a transaction per batch);
//   - bitfield: one BITFIELD of k "SET u1" per item (an add in one
//     command; a gated write's);
//   - ping: Redis's cost of a command that does nothing.
//
// With $BLOOMERY_REDISBLOOM (a RedisBloom module), BF.EXISTS and BF.ADD
// of the same batches on a RedisBloom filter reserved for 2·10⁷ at 0.01
// compare. It reports the server's CPU µs per item (INFO cpu).
func BenchmarkRedisFloor(b *testing.B) {
	ctx := context.Background()
	c := benchClient(b)
	sz, err := bloom.Size(20_000_000, 0.005, bloom.Blocked)
	if err != nil {
		b.Fatal(err)
	}
	const key, batch = "{f}:x:0", 400
	if err := c.SetRange(ctx, key, int64(sz.Bytes())-1, "\x00").Err(); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	block := make([]byte, 64)
	offs := make([]uint64, 0, sz.K)
	each := func(p redis.Pipeliner, f func(h bloom.Hash, first int64)) {
		for range batch {
			h := bloom.Hash{H1: rng.Uint64(), H2: rng.Uint64()}
			offs = sz.Offsets(h, offs[:0])
			f(h, int64(offs[0]/512*64))
		}
	}
	ways := []struct {
		name  string
		queue func(p redis.Pipeliner)
	}{
		{"getrange", func(p redis.Pipeliner) {
			each(p, func(_ bloom.Hash, first int64) { p.GetRange(ctx, key, first, first+63) })
		}},
		{"getrange+setrange", func(p redis.Pipeliner) {
			each(p, func(_ bloom.Hash, first int64) {
				p.GetRange(ctx, key, first, first+63)
				p.SetRange(ctx, key, first, string(block))
			})
		}},
		{"bitfield", func(p redis.Pipeliner) {
			args := []any{"BITFIELD", key}
			each(p, func(h bloom.Hash, _ int64) {
				for _, o := range sz.Offsets(h, offs[:0]) {
					args = append(args, "SET", "u1", o, 1)
				}
			})
			p.Do(ctx, args...)
		}},
		{"ping", func(p redis.Pipeliner) {
			each(p, func(bloom.Hash, int64) { p.Ping(ctx) })
		}},
	}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) { floorLoop(b, c, batch, w.queue) })
	}
	module := os.Getenv("BLOOMERY_REDISBLOOM")
	if module == "" {
		return
	}
	rb := redis.NewClient(&redis.Options{Addr: redistest.Start(b, "--loadmodule", module).Addr()})
	b.Cleanup(func() { rb.Close() })
	if err := rb.Do(ctx, "BF.RESERVE", "bf", 0.01, 20_000_000).Err(); err != nil {
		b.Fatal(err)
	}
	for _, cmd := range []string{"BF.EXISTS", "BF.ADD"} {
		b.Run("redisbloom-"+cmd, func(b *testing.B) {
			floorLoop(b, rb, batch, func(p redis.Pipeliner) {
				for range batch {
					p.Do(ctx, cmd, "bf", rng.Uint64())
				}
			})
		})
	}
}

// floorLoop runs b.N pipelines that queue makes, of items each, and
// reports the Redis server's CPU time per item.
func floorLoop(b *testing.B, c *redis.Client, items int, queue func(p redis.Pipeliner)) {
	ctx := context.Background()
	cpu0, _ := serverCost(b, c)
	for range b.N {
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { queue(p); return nil }); err != nil {
			b.Fatal(err)
		}
	}
	cpu1, _ := serverCost(b, c)
	b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/1e3/float64(b.N*items), "server-µs/item")
}
