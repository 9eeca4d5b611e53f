// Command redis benchmarks Bloom filters kept in Redis: go-zero's
// core/bloom filter against ours (redisfilter.Filter, and GoZeroFilter in
// go-zero's format), single calls and batches, from 1 and many
// goroutines, on one redis-server that it starts on a free loopback port
// and stops at the end. It reports items per second for Add and Exists,
// the ratios to go-zero's rates, and what each item costs the server
// (INFO commandstats and INFO cpu) and this process. See ../../README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/bench"
	"github.com/bloomery/bloom/bench/redisbench"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/zeromicro/go-zero/core/logx"
)

// stopServer stops the redis-server, if one runs; fail calls it.
var stopServer = func() {}

func main() {
	n := flag.String("n", "1e6", "distinct keys: our filter's capacity, the keys added and the filled filters' content")
	p := flag.Float64("p", 0.01, "our filter's target false-positive rate")
	gzBits := flag.Float64("gzbits", 20, "go-zero's bits per item (go-zero's advice); 0: our filter's bit count")
	dur := flag.Duration("duration", 2*time.Second, "time per case and operation in each round")
	rounds := flag.Int("rounds", 5, "rounds; each runs every case once, in rotated order")
	gs := flag.String("goroutines", "1,32", "comma list of goroutine counts")
	bs := flag.String("batches", "100,1000", "comma list of batch sizes for our AddMany/ExistsMany")
	seed := flag.Uint64("seed", 1, "random seed for all key sets")
	server := flag.String("redis-server", "redis-server", "the redis-server program")
	flag.Parse()
	nk, err := bench.ParseCount(*n)
	if err != nil {
		fail(err)
	}
	goroutines, err1 := parseInts(*gs)
	batches, err2 := parseInts(*bs)
	if err := firstErr(err1, err2); err != nil {
		fail(err)
	}
	if !(*p > 0 && *p < 1) || *gzBits < 0 || *dur <= 0 || *rounds < 1 {
		fail(fmt.Errorf("need 0 < -p < 1, -gzbits ≥ 0, -duration > 0, -rounds ≥ 1"))
	}
	logx.Disable() // go-zero logs slow calls to stdout, into the tables

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	srv, err := redisbench.StartRedis(*server)
	if err != nil {
		fail(err)
	}
	stopServer = srv.Stop
	defer srv.Stop()

	env, geometry := setup(srv.Addr(), nk, *p, *gzBits)
	defer env.Close()
	flat := bench.Keys(*seed, int(nk))
	keys := bench.Split(flat)
	queries, _ := bench.Queries(*seed, flat, int(nk))
	cases := makeCases(goroutines, batches)
	fmt.Fprintf(os.Stderr, "redis-server on %s; filling the filters with %d keys\n", srv.Addr(), nk)
	filled := map[string]redisbench.RedisSnapshot{}
	for _, name := range redisbench.RedisLibNames {
		if filled[name], err = env.Filled(ctx, name, keys); err != nil {
			fail(fmt.Errorf("filling %s: %w", name, err))
		}
	}
	runRounds(ctx, env, cases, keys, queries, filled, *rounds, *dur)

	bench.PrintEnv("github.com/zeromicro/go-zero", "github.com/redis/go-redis/v9")
	fmt.Printf("%s\n\n%s\n\n", redisVersion(ctx, env), geometry)
	fmt.Printf("Keys: 16 random bytes, %s distinct. Each case runs %v of Add into a fresh filter (after FLUSHALL; Add goes through the keys in order, "+
		"starting over after %s), then %v of Exists on a filter holding all %s keys (restored from a snapshot after FLUSHALL) over a shuffled mix of "+
		"half of those keys and half never-inserted keys; %d rounds, each running every case in turn, the first case rotating. "+
		"Rates are items (not calls) per second, medians over rounds, with min–max; ratios are medians over rounds of the ratio to go-zero's rate "+
		"in the same round. Both clients keep go-redis's default pool of 10 × GOMAXPROCS connections.\n\n",
		bench.FormatCount(nk), *dur, bench.FormatCount(nk), *dur, bench.FormatCount(nk), *rounds)
	printRates(cases, goroutines)
	printCosts(cases)
	printGoals(cases, goroutines)
}

// setup connects the clients and describes the filters' geometry.
func setup(addr string, n uint64, p, gzBitsPerItem float64) (*redisbench.RedisEnv, string) {
	s, err := bloom.Size(n, p, bloom.Blocked) // what redisfilter.Create makes
	if err != nil {
		fail(err)
	}
	gz, how := s.Bits, "our filter's bit count"
	if gzBitsPerItem != 0 {
		gz, how = uint64(math.Round(gzBitsPerItem*float64(n))), fmt.Sprintf("%g bits per item, as go-zero's docs advise", gzBitsPerItem)
	}
	env, err := redisbench.NewRedisEnv(addr, n, p, gz)
	if err != nil {
		fail(err)
	}
	const k = redisfilter.GoZeroK
	return env, fmt.Sprintf("Filters: bloomery is redisfilter.Create(n = %s, p = %g), %s layout: m = %d bits (%.2f bits/item), k = %d, expected rate at n %.3g. "+
		"go-zero and bloomery-gozero share go-zero's format: m = %d bits (%s, %.2f bits/item), k = %d, expected rate at n %.3g.",
		bench.FormatCount(n), p, s.Layout, s.Bits, s.BitsPerKey(), s.K, s.FPRAt(n),
		gz, how, float64(gz)/float64(n), k, math.Pow(1-math.Exp(-k*float64(n)/float64(gz)), k))
}

func redisVersion(ctx context.Context, env *redisbench.RedisEnv) string {
	info, err := env.Client.Info(ctx, "server").Result()
	if err != nil {
		return "redis-server: " + err.Error()
	}
	f := redisbench.InfoFields(info)
	return fmt.Sprintf("redis-server %s (%s, io-threads %s)", f["redis_version"], f["multiplexing_api"], ioThreads(ctx, env))
}

func ioThreads(ctx context.Context, env *redisbench.RedisEnv) string {
	v, err := env.Client.ConfigGet(ctx, "io-threads").Result()
	if err != nil || v["io-threads"] == "" {
		return "?"
	}
	return v["io-threads"]
}

// runRounds runs every case once per round, the first case rotating.
func runRounds(ctx context.Context, env *redisbench.RedisEnv, cases []*benchCase, keys, queries [][]byte, filled map[string]redisbench.RedisSnapshot, rounds int, d time.Duration) {
	for r := range rounds {
		first := r * len(cases) / rounds
		for j := range cases {
			c := cases[(first+j)%len(cases)]
			runCase(ctx, env, c, keys, queries, filled[c.lib], d)
			add, ex := c.ops[opAdd].rounds, c.ops[opExists].rounds
			fmt.Fprintf(os.Stderr, "round %d/%d %-32s Add %9.0f/s  Exists %9.0f/s\n", r+1, rounds, c.label(),
				add[len(add)-1].rate, ex[len(ex)-1].rate)
		}
	}
}

// runCase runs one case's Add and Exists once and records them.
func runCase(ctx context.Context, env *redisbench.RedisEnv, c *benchCase, keys, queries [][]byte, filled redisbench.RedisSnapshot, d time.Duration) {
	unit := max(1, c.batch)
	for op := range c.ops {
		var err error
		if op == opAdd {
			err = env.Flush(ctx)
		} else {
			err = env.Restore(ctx, filled)
		}
		if err != nil {
			fail(err)
		}
		l, err := env.Open(ctx, c.lib, c.batch, op == opAdd)
		if err != nil {
			fail(err)
		}
		if err := redisbench.ResetRedisStats(ctx, env.Client); err != nil {
			fail(err)
		}
		before, err := redisbench.ReadRedisStats(ctx, env.Client)
		if err != nil {
			fail(err)
		}
		cpu0, cpuOK := redisbench.ProcessCPU()
		var fn int
		var done int
		var elapsed time.Duration
		if op == opAdd {
			done, elapsed, err = redisbench.Drive(ctx, keys, unit, c.goroutines, 0, d, l.Add)
		} else {
			var negatives atomic.Int64
			done, elapsed, err = redisbench.Drive(ctx, queries, unit, c.goroutines, 0, d, func(ctx context.Context, items [][]byte) error {
				_, f, err := l.Exists(ctx, items)
				negatives.Add(int64(f))
				return err
			})
			fn = int(negatives.Load())
		}
		cpu1, _ := redisbench.ProcessCPU()
		if err != nil {
			fail(fmt.Errorf("%s %s: %w", c.label(), opNames[op], err))
		}
		after, err := redisbench.ReadRedisStats(ctx, env.Client)
		if err != nil {
			fail(err)
		}
		m := measure{items: done, rate: float64(done) / elapsed.Seconds(), wall: elapsed, work: after.Work(),
			serverCPU: after.CPU - before.CPU, clientCPU: -1, falseNegatives: fn}
		if cpuOK {
			m.clientCPU = cpu1 - cpu0
		}
		c.ops[op].rounds = append(c.ops[op].rounds, m)
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || x < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, x)
	}
	return out, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func fail(err error) {
	stopServer()
	fmt.Fprintln(os.Stderr, "redis:", err)
	os.Exit(2)
}
