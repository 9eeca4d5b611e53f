// Command serve benchmarks bloomery serve side by side with redis-server
// 7.0 on the same machine, in one interleaved run, with redis-benchmark
// (Debian's redis-tools) at -c 50 and each pipeline depth.
//
// The peers are redis-server with a RedisBloom module (-redisbloom, or
// $BLOOMERY_REDISBLOOM: the path of a redisbloom.so built for this
// redis-server), once with Redis's default persistence (RDB snapshots,
// no append-only file) and once with the same promise as bloomery's
// default (appendonly yes, appendfsync everysec); both run the same BF.*
// commands. Without a module, plain redis-server runs SADD/SISMEMBER as a
// reference for small commands, and the run says so.
//
// Each round runs every case once on every server, rotating which goes
// first; the report has the median requests/s over the rounds, the
// median of the per-round ratios bloomery/peer, and each server's CPU
// time per million requests (from /proc/PID/stat, with the children it
// waited for: redis-server's forked RDB saves and AOF rewrites), a figure
// the shared machine disturbs less than throughput. Each run also records
// which servers did background persistence while it ran (saves.go), and
// the ratios are given again over the rounds in which neither run of the
// pair had any; and how many of the machine's cores nobody used while it
// ran (from /proc/stat), which says whether the rate was bound by CPU at
// all.
//
// -keys N fills every server with N small filters (BF.ADD k:i x) and
// reports INFO used_memory per key, then bloomery's restart time with
// those keys in its log (after kill -9) and in its snapshot (after
// SHUTDOWN). -mem-n measures the resident set of one large filter against
// its bytes. Both measure the memory backend, and -backend redis skips
// them.
//
// -backend redis measures the stateless mode instead (stateless.go).
// -baseline BIN runs a second bloomery build beside the first, as
// "bloomery-base", so a change is measured against the build before it
// in the same run.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bloomery/bloom/bench"
	"github.com/zeromicro/go-zero/core/logx"
)

func main() {
	o := options{}
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds")
	flag.IntVar(&o.requests, "n", 300000, "requests per redis-benchmark run")
	flag.IntVar(&o.clients, "c", 50, "redis-benchmark clients")
	pipes := flag.String("P", "1,16", "comma list of pipeline depths")
	cases := flag.String("cases", "add,exists,madd10,newkey", "comma list of cases: "+caseNames())
	flag.StringVar(&o.fsync, "appendfsync", "everysec", "bloomery's --appendfsync")
	flag.StringVar(&o.module, "redisbloom", os.Getenv("BLOOMERY_REDISBLOOM"), "RedisBloom module for the peers (default $BLOOMERY_REDISBLOOM)")
	flag.StringVar(&o.serveArgs, "serve-args", "", "extra arguments for bloomery serve, space-separated")
	flag.IntVar(&o.keys, "keys", 0, "small filters for the memory-per-key and restart measurement (0: skip it)")
	flag.IntVar(&o.memN, "mem-n", 10_000_000, "items in the memory measurement's filter (0: skip it)")
	flag.StringVar(&o.bin, "bloomery", "", "bloomery binary (default: go build ../cmd/bloomery)")
	flag.StringVar(&o.baseline, "baseline", "", "a second bloomery binary run beside the first as bloomery-base (A/B)")
	flag.StringVar(&o.backend, "backend", "memory", "bloomery's backend: memory, or redis (a backing redis-server per bloomery, started here)")
	flag.Parse()
	logx.Disable() // go-zero (imported by redisbench) logs CPU stats to stdout, into the tables
	var err error
	if o.pipes, err = intList(*pipes); err == nil {
		o.cases, err = pickCases(*cases)
	}
	if err == nil && o.backend != "memory" && o.backend != "redis" {
		err = fmt.Errorf("-backend: %q is neither memory nor redis", o.backend)
	}
	if err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

// options are the command line's.
type options struct {
	rounds, requests, clients, keys, memN int
	pipes                                 []int
	cases                                 []benchCase
	fsync, module, serveArgs, bin         string
	baseline, backend                     string
}

func run(o options) error {
	tmp, err := os.MkdirTemp("", "bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.bin == "" {
		if o.bin, err = bench.BuildBloomery(tmp); err != nil {
			return err
		}
	}
	if o.module == "" {
		fmt.Println("# no RedisBloom module (-redisbloom or $BLOOMERY_REDISBLOOM): the peer is plain redis-server running SADD/SISMEMBER")
	}
	if err := compareAll(o, tmp); err != nil {
		return err
	}
	if o.backend == "redis" {
		return nil // -keys and -mem-n measure the memory backend
	}
	if o.keys > 0 {
		if err := measureKeys(o, filepath.Join(tmp, "keys")); err != nil {
			return err
		}
	}
	if o.memN > 0 {
		return measureMemory(o, filepath.Join(tmp, "mem"))
	}
	return nil
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		out = append(out, n)
	}
	return out, nil
}
