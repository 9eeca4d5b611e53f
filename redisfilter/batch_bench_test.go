package redisfilter

import (
	"context"
	"strconv"
	"testing"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The batched calls against one real redis-server, batches of 1000 on a
// filter of 10⁶ items at p = 0.01. The figures that compare with go-zero
// come from bench/cmd/redis (docs/BENCHMARKS.md); these measure the
// client's share: time and allocations per batch.

const benchBatch = 1000

func benchClient(b *testing.B) *redis.Client {
	b.Helper()
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	b.Cleanup(func() { c.Close() })
	return c
}

func benchItems(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(prefix + strconv.Itoa(i))
	}
	return out
}

// batchAPI is what the benchmarks drive: Filter and GoZeroFilter.
type batchAPI interface {
	AddMany(ctx context.Context, items [][]byte) ([]bool, error)
	ExistsMany(ctx context.Context, items [][]byte) ([]bool, error)
}

func benchFilters(b *testing.B, c *redis.Client) map[string]batchAPI {
	b.Helper()
	ctx := context.Background()
	out := map[string]batchAPI{}
	for _, l := range []bloom.Layout{bloom.Blocked, bloom.Classic} {
		f, err := Create(ctx, c, "bench-"+l.String(), 1_000_000, 0.01, WithLayout(l))
		if err != nil {
			b.Fatal(err)
		}
		out[l.String()] = f
	}
	gz, err := OpenGoZero(c, "bench-gozero", 20_000_000)
	if err != nil {
		b.Fatal(err)
	}
	out["gozero"] = gz
	return out
}

func BenchmarkBatch(b *testing.B) {
	ctx := context.Background()
	c := benchClient(b)
	filters := benchFilters(b, c)
	keys := benchItems("k", 100*benchBatch)
	absent := benchItems("a", 100*benchBatch)
	for _, name := range []string{"blocked", "classic", "gozero"} {
		f := filters[name]
		b.Run(name+"/AddMany", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				lo := i % 100 * benchBatch
				if _, err := f.AddMany(ctx, keys[lo:lo+benchBatch]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/item")
		})
		b.Run(name+"/ExistsMany", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				lo := i % 100 * benchBatch
				src := keys
				if i%2 == 1 {
					src = absent
				}
				if _, err := f.ExistsMany(ctx, src[lo:lo+benchBatch]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/item")
		})
	}
}
