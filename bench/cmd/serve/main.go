// Command serve benchmarks bloomery serve with redis-benchmark (Debian's
// redis-tools), side by side with redis-server 7.0 on the same machine in
// one interleaved run: BF.ADD, BF.EXISTS and BF.MADD of 10 items against
// bloomery, SADD and SISMEMBER against redis-server as the reference for
// small commands, at -c 50 and each pipeline depth. Each round runs every
// case once, alternating which server goes first; it reports the median
// requests/s over the rounds and the median of the per-round ratios
// BF.ADD/SADD and BF.EXISTS/SISMEMBER. Then it measures memory: the
// resident set of a fresh bloomery serve holding one filter of -mem-n
// items, against the filter's own bytes (BF.INFO Size).
package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bloomery/bloom/bench"
	"github.com/bloomery/bloom/bench/redisbench"
	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/logx"
)

func main() {
	rounds := flag.Int("rounds", 5, "interleaved rounds")
	requests := flag.Int("n", 300000, "requests per redis-benchmark run")
	clients := flag.Int("c", 50, "redis-benchmark clients")
	pipes := flag.String("P", "1,16", "comma list of pipeline depths")
	fsync := flag.String("appendfsync", "everysec", "bloomery's --appendfsync")
	memN := flag.Int("mem-n", 10_000_000, "items in the memory measurement's filter (0: skip it)")
	bin := flag.String("bloomery", "", "bloomery binary (default: go build ../cmd/bloomery)")
	flag.Parse()
	logx.Disable() // go-zero (imported by redisbench) logs CPU stats to stdout, into the tables
	if err := run(*rounds, *requests, *clients, *pipes, *fsync, *memN, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

func run(rounds, requests, clients int, pipes, fsync string, memN int, bin string) error {
	tmp, err := os.MkdirTemp("", "bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		if bin, err = bench.BuildBloomery(tmp); err != nil {
			return err
		}
	}
	rs, err := redisbench.StartRedis("redis-server")
	if err != nil {
		return err
	}
	defer rs.Stop()
	bl, err := startBloomery(bin, filepath.Join(tmp, "data"), fsync)
	if err != nil {
		return err
	}
	defer bl.stop()
	ctx := context.Background()
	if err := prefill(ctx, bl.addr, rs.Addr()); err != nil {
		return err
	}
	fmt.Printf("# redis-benchmark -c %d -n %d -r 100000000, %d interleaved rounds; bloomery --appendfsync %s\n",
		clients, requests, rounds, fsync)
	for _, ps := range strings.Split(pipes, ",") {
		p, err := strconv.Atoi(ps)
		if err != nil {
			return fmt.Errorf("-P %q: %w", ps, err)
		}
		if err := compare(bl.addr, rs.Addr(), rounds, requests, clients, p); err != nil {
			return err
		}
	}
	bl.stop()
	if memN > 0 {
		return measureMemory(ctx, bin, filepath.Join(tmp, "mem"), memN)
	}
	return nil
}

// cases are the commands each round runs: ours against bloomery, the
// reference against redis-server; pairs share a ratio.
var cases = []struct {
	name, ours, ref string
}{
	{"add", "BF.ADD bf __rand_int__", "SADD set __rand_int__"},
	{"exists", "BF.EXISTS bf __rand_int__", "SISMEMBER set __rand_int__"},
	{"madd10", "BF.MADD bf" + strings.Repeat(" __rand_int__", 10), ""},
}

func compare(ours, ref string, rounds, requests, clients, pipe int) error {
	rps := map[string][]float64{}
	ratios := map[string][]float64{}
	for r := range rounds {
		for _, c := range cases {
			var a, b float64
			var err error
			runOurs := func() error { a, err = redisBenchmark(ours, c.ours, requests, clients, pipe); return err }
			runRef := func() error {
				if c.ref == "" {
					return nil
				}
				b, err = redisBenchmark(ref, c.ref, requests, clients, pipe)
				return err
			}
			first, second := runOurs, runRef
			if r%2 == 1 {
				first, second = runRef, runOurs
			}
			if err := first(); err != nil {
				return err
			}
			if err := second(); err != nil {
				return err
			}
			rps["bloomery "+c.ours] = append(rps["bloomery "+c.ours], a)
			if c.ref != "" {
				rps["redis "+c.ref] = append(rps["redis "+c.ref], b)
				ratios[c.name] = append(ratios[c.name], a/b)
			}
		}
	}
	fmt.Printf("\n## -P %d\n\n| server | command | median req/s | rounds |\n|---|---|---:|---|\n", pipe)
	for _, c := range cases {
		for _, k := range []string{"bloomery " + c.ours, "redis " + c.ref} {
			if v, ok := rps[k]; ok {
				srv, cmd, _ := strings.Cut(k, " ")
				fmt.Printf("| %s | `%s` | %.0f | %s |\n", srv, cmd, bench.Median(v), fmtList(v))
			}
		}
	}
	fmt.Printf("\n| ratio | median | per round |\n|---|---:|---|\n")
	for _, k := range []string{"add", "exists"} {
		fmt.Printf("| %s | %.2f | %s |\n", map[string]string{"add": "BF.ADD / SADD", "exists": "BF.EXISTS / SISMEMBER"}[k],
			bench.Median(ratios[k]), fmtRatios(ratios[k]))
	}
	return nil
}

// redisBenchmark runs one redis-benchmark case and returns its requests/s.
func redisBenchmark(addr, command string, requests, clients, pipe int) (float64, error) {
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(clients), "-n", strconv.Itoa(requests),
		"-P", strconv.Itoa(pipe), "-r", "100000000", "--csv"}
	args = append(args, strings.Fields(command)...)
	out, err := exec.Command("redis-benchmark", args...).Output()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark %s: %w", command, err)
	}
	recs, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(recs) < 2 || len(recs[1]) < 2 {
		return 0, fmt.Errorf("redis-benchmark %s: unexpected output %q", command, out)
	}
	return strconv.ParseFloat(recs[1][1], 64)
}

// prefill gives the exists cases something to find: 1e6 items each.
func prefill(ctx context.Context, ours, ref string) error {
	for _, c := range []struct{ addr, cmd string }{{ours, "BF.MADD"}, {ref, "SADD"}} {
		cl := redis.NewClient(&redis.Options{Addr: c.addr})
		key := map[string]string{"BF.MADD": "bf", "SADD": "set"}[c.cmd]
		if c.cmd == "BF.MADD" {
			if err := cl.Do(ctx, "BF.RESERVE", key, 0.01, 100_000_000).Err(); err != nil {
				return err
			}
		}
		for i := 0; i < 1_000_000; i += 1000 {
			args := []any{c.cmd, key}
			for j := i; j < i+1000; j++ {
				args = append(args, strconv.Itoa(j*97))
			}
			if err := cl.Do(ctx, args...).Err(); err != nil {
				return err
			}
		}
		cl.Close()
	}
	return nil
}

func fmtList(v []float64) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprintf("%.0fk", x/1000))
	}
	return strings.Join(parts, " ")
}

func fmtRatios(v []float64) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprintf("%.2f", x))
	}
	return strings.Join(parts, " ")
}

// bloomery is a bloomery serve subprocess.
type bloomery struct {
	cmd  *exec.Cmd
	addr string
}

func startBloomery(bin, dir, fsync string) (*bloomery, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--dir", dir, "--appendfsync", fsync, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &bloomery{cmd: cmd, addr: addr}
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer cl.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cl.Ping(context.Background()).Err() == nil {
			return b, nil
		}
	}
	b.stop()
	return nil, fmt.Errorf("bloomery serve on %s did not answer", addr)
}

func (b *bloomery) stop() {
	if b.cmd.Process == nil || b.cmd.ProcessState != nil {
		return
	}
	b.cmd.Process.Signal(os.Interrupt)
	b.cmd.Wait()
}

// measureMemory fills one filter of n items in a fresh server and
// compares the process's resident set with the filter's bytes.
func measureMemory(ctx context.Context, bin, dir string, n int) error {
	b, err := startBloomery(bin, dir, "everysec")
	if err != nil {
		return err
	}
	defer b.stop()
	idle, err := rss(b.cmd.Process.Pid)
	if err != nil {
		return err
	}
	cl := redis.NewClient(&redis.Options{Addr: b.addr})
	defer cl.Close()
	if err := cl.Do(ctx, "BF.RESERVE", "mem", 0.01, n).Err(); err != nil {
		return err
	}
	for i := 0; i < n; i += 1000 {
		args := []any{"BF.MADD", "mem"}
		for j := i; j < min(i+1000, n); j++ {
			args = append(args, "item:"+strconv.Itoa(j))
		}
		if err := cl.Do(ctx, args...).Err(); err != nil {
			return err
		}
	}
	size, err := cl.Do(ctx, "BF.INFO", "mem", "SIZE").Slice()
	if err != nil {
		return err
	}
	bytes := size[0].(int64)
	full, err := rss(b.cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("\n## memory: one filter of %d items at p = 0.01\n\n", n)
	fmt.Printf("| idle RSS | filled RSS | filter bytes (BF.INFO Size) | (RSS − idle) / bytes | RSS − 1.2 × bytes |\n|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| %.1f MB | %.1f MB | %.1f MB | %.3f | %.1f MB |\n", float64(idle)/1e6, float64(full)/1e6, float64(bytes)/1e6,
		float64(full-idle)/float64(bytes), (float64(full)-1.2*float64(bytes))/1e6)
	return nil
}

// rss is a process's resident set in bytes (Linux /proc).
func rss(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
