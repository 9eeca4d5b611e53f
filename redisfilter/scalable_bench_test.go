package redisfilter

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// BenchmarkScalableExistsMany reads batches of 1000 (half present, half
// absent) from a chain of four sub-filters holding 10⁶ items (n0 = 10⁵,
// p = 0.01, growth 2), against one real redis-server. Besides the
// client's time and allocations it reports the Redis server's own CPU
// time per item (INFO cpu: user and system, all its threads) and its
// commands per item (INFO stats, the HMGET of each pipeline included),
// the figures of docs/BENCHMARKS.md.
func BenchmarkScalableExistsMany(b *testing.B) {
	ctx := context.Background()
	c := benchClient(b)
	for _, l := range []bloom.Layout{bloom.Blocked, bloom.Classic} {
		s, err := CreateScalable(ctx, c, "bench-chain-"+l.String(), 100_000, 0.01, WithLayout(l))
		if err != nil {
			b.Fatal(err)
		}
		keys := benchItems("k", 1_000_000)
		for lo := 0; lo < len(keys); lo += 10_000 {
			if _, err := s.AddMany(ctx, keys[lo:lo+10_000]); err != nil {
				b.Fatal(err)
			}
		}
		absent := benchItems("a", 100*benchBatch)
		b.Run(l.String(), func(b *testing.B) {
			b.ReportAllocs()
			cpu0, cmds0 := serverCost(b, c)
			existsLoop(b, s, keys, absent)
			cpu1, cmds1 := serverCost(b, c)
			n := float64(b.N * benchBatch)
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/1e3/n, "server-µs/item")
			b.ReportMetric(float64(cmds1-cmds0)/n, "commands/item")
		})
	}
}

// serverCost reads the Redis server's CPU time so far and the number of
// commands it has run (less the INFO calls that ask).
func serverCost(b *testing.B, c *redis.Client) (time.Duration, int) {
	b.Helper()
	info, err := c.Info(context.Background(), "cpu", "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var cpu float64
	cmds := 0
	for _, line := range strings.Split(info, "\r\n") {
		name, v, _ := strings.Cut(line, ":")
		switch name {
		case "used_cpu_user", "used_cpu_sys":
			x, _ := strconv.ParseFloat(v, 64)
			cpu += x
		case "total_commands_processed":
			cmds, _ = strconv.Atoi(v)
		}
	}
	return time.Duration(cpu * float64(time.Second)), cmds
}

// BenchmarkScalableAddMany adds batches of 400 new items to a filter
// reserved for 2·10⁷ items at p = 0.01 (one blocked sub-filter, as
// behind the servebench figures of docs/BENCHMARKS.md), each way
// AddMany has: the add script, a gated write, a watched write. Besides
// the client's time and allocations per batch (not counting the items
// and their hashes) it reports the Redis server's CPU time per item.
func BenchmarkScalableAddMany(b *testing.B) {
	ctx := context.Background()
	c := benchClient(b)
	const batch = 400
	ways := []struct {
		name string
		add  func(s *Scalable, m *scalableMeta, hs []bloom.Hash, out []bool) error
	}{
		{"script", func(s *Scalable, m *scalableMeta, hs []bloom.Hash, out []bool) error {
			_, _, err := s.addChunk(ctx, m, nil, hs)
			return err
		}},
		{"gated", func(s *Scalable, m *scalableMeta, hs []bloom.Hash, out []bool) error {
			_, err := s.addGated(ctx, m, hs, out)
			return err
		}},
		{"watched", func(s *Scalable, m *scalableMeta, hs []bloom.Hash, out []bool) error {
			_, err := s.addWatched(ctx, m, hs, out)
			return err
		}},
	}
	for _, w := range ways {
		s, err := CreateScalable(ctx, c, "bench-add-"+w.name, 20_000_000, 0.01)
		if err != nil {
			b.Fatal(err)
		}
		for lo := 0; lo < 1_000_000; lo += 10_000 {
			if _, err := s.AddMany(ctx, benchItems("k"+strconv.Itoa(lo)+":", 10_000)); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			out := make([]bool, batch)
			cpu0, _ := serverCost(b, c)
			for i := range b.N {
				b.StopTimer() // the items and their hashes are not the call's
				hs := s.hashes(benchItems("n"+strconv.Itoa(i)+":", batch))
				b.StartTimer()
				if err := w.add(s, s.view(), hs, out); err != nil {
					b.Fatal(err)
				}
			}
			cpu1, _ := serverCost(b, c)
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/1e3/float64(b.N*batch), "server-µs/item")
		})
	}
}
