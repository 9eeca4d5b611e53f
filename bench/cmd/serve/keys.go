package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/bloomery/bloom/bench/redisbench"
	"github.com/redis/go-redis/v9"
)

// measureKeys fills bloomery (and the RedisBloom peer, when there is a
// module) with n small filters, BF.ADD k:i x, and reports INFO
// used_memory per key; then bloomery's restart time with the keys in its
// log (after kill -9) and in its snapshot (after a graceful stop).
func measureKeys(o options, dir string) error {
	ctx := context.Background()
	bl, err := startBloomery(o.bin, dir, o.fsync, o.serveArgs)
	if err != nil {
		return err
	}
	defer bl.kill()
	targets := []*target{bl.target()}
	if o.module != "" {
		peers, err := startPeers(o.module)
		if err != nil {
			return err
		}
		for _, p := range peers {
			defer p.stop()
		}
		targets = append(targets, peers[0])
	}
	fmt.Printf("\n## %d small filters (BF.ADD k:i x: capacity 100, error 0.01)\n\n", o.keys)
	fmt.Printf("| server | used_memory per key | fill time | keys/s |\n|---|---:|---:|---:|\n")
	for _, t := range targets {
		perKey, took, err := fillKeys(ctx, t, o.keys)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		fmt.Printf("| %s | %.0f B | %.1f s | %.0f |\n", t.name, perKey, took.Seconds(), float64(o.keys)/took.Seconds())
	}

	fmt.Printf("\n| bloomery restart with %d keys | until the first PING | keys |\n|---|---:|---:|\n", o.keys)
	for _, how := range []string{"log (after kill -9)", "snapshot (after a graceful stop)"} {
		if how == "log (after kill -9)" {
			bl.kill()
		} else {
			bl.stop()
		}
		start := time.Now()
		if bl, err = startBloomery(o.bin, dir, o.fsync, o.serveArgs); err != nil {
			return err
		}
		took := time.Since(start)
		cl := redis.NewClient(&redis.Options{Addr: bl.addr})
		n, err := cl.DBSize(ctx).Result()
		cl.Close()
		if err != nil {
			return err
		}
		if n != int64(o.keys) {
			return fmt.Errorf("after a restart from the %s: %d keys, want %d", how, n, o.keys)
		}
		fmt.Printf("| %s | %.2f s | %d |\n", how, took.Seconds(), n)
	}
	return nil
}

// fillKeys makes n filters on t in pipelines of 1000 and returns
// used_memory's growth per key and the time the filling took.
func fillKeys(ctx context.Context, t *target, n int) (float64, time.Duration, error) {
	cl := redis.NewClient(&redis.Options{Addr: t.addr, ReadTimeout: time.Minute})
	defer cl.Close()
	before, err := usedMemory(ctx, cl)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for i := 0; i < n; i += 1000 {
		pipe := cl.Pipeline()
		for j := i; j < min(i+1000, n); j++ {
			pipe.Do(ctx, "BF.ADD", "k:"+strconv.Itoa(j), "x")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, 0, err
		}
	}
	took := time.Since(start)
	after, err := usedMemory(ctx, cl)
	if err != nil {
		return 0, 0, err
	}
	return float64(after-before) / float64(n), took, nil
}

// usedMemory is INFO memory's used_memory after MEMORY PURGE (for
// bloomery, a garbage collection first, so garbage is not counted).
func usedMemory(ctx context.Context, cl *redis.Client) (int64, error) {
	cl.Do(ctx, "MEMORY", "PURGE") // best effort
	info, err := cl.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(redisbench.InfoFields(info)["used_memory"], 10, 64)
}
