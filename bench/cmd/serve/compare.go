package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom/bench"
	"github.com/bloomery/bloom/bench/redisbench"
	"github.com/redis/go-redis/v9"
)

// benchCase is one redis-benchmark command: bf for servers with BF.*,
// ref for plain redis-server ("" when there is no reference).
type benchCase struct {
	name, bf, ref string
}

var allCases = []benchCase{
	// The round trip alone: what any server on this machine spends per
	// request before doing anything (the floor of every other case).
	{"ping", "PING", "PING"},
	{"add", "BF.ADD bf __rand_int__", "SADD set __rand_int__"},
	{"exists", "BF.EXISTS bf __rand_int__", "SISMEMBER set __rand_int__"},
	{"madd10", "BF.MADD bf" + strings.Repeat(" __rand_int__", 10), ""},
	{"newkey", "BF.ADD key:__rand_int__ x", "SADD key:__rand_int__ x"}, // every request makes a filter
	{"cfadd", "CF.ADD cf __rand_int__", ""},
	{"cfexists", "CF.EXISTS cf __rand_int__", ""},
}

// cfCapacity is the cuckoo filter's CF.RESERVE on every server: 2²⁴
// buckets of 2 (32 MiB, within bloomery's default 128 MiB per filter),
// so that the prefill and every CF.ADD of a run (rounds × -n × depths)
// stay in one sub-filter, well below the load at which it grows.
const cfCapacity = 1 << 25

// usesCuckoo reports whether a case of cases runs CF.* commands.
func usesCuckoo(cases []benchCase) bool {
	return slices.ContainsFunc(cases, func(c benchCase) bool { return strings.HasPrefix(c.bf, "CF.") })
}

func caseNames() string {
	var names []string
	for _, c := range allCases {
		names = append(names, c.name)
	}
	return strings.Join(names, ",")
}

func pickCases(list string) ([]benchCase, error) {
	var out []benchCase
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(allCases, func(c benchCase) bool { return c.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("-cases: unknown case %q (have %s)", name, caseNames())
		}
		out = append(out, allCases[i])
	}
	return out, nil
}

// command is what c runs on t, or "" for none.
func (c benchCase) command(t *target) string {
	if t.module {
		return c.bf
	}
	return c.ref
}

// compareAll starts bloomery and the peers, prefills them, and runs every
// pipeline depth.
func compareAll(o options, tmp string) error {
	ours, err := bloomeries(o, tmp)
	if err != nil {
		return err
	}
	peers, err := startPeers(o.module)
	targets := append(ours, peers...)
	defer func() {
		for _, t := range targets {
			t.stop()
		}
	}()
	if err != nil {
		return err
	}
	for _, t := range targets {
		if err := prefill(context.Background(), t, usesCuckoo(o.cases)); err != nil {
			return fmt.Errorf("%s: prefill: %w", t.name, err)
		}
	}
	fmt.Printf("# redis-benchmark -c %d -n %d -r 100000000 + run number, %d interleaved rounds; bloomery --appendfsync %s %s (backend %s)\n",
		o.clients, o.requests, o.rounds, o.fsync, o.serveArgs, o.backend)
	for _, p := range o.pipes {
		if err := compare(o, targets, p); err != nil {
			return err
		}
	}
	if usesCuckoo(o.cases) {
		return reportCuckoo(context.Background(), targets)
	}
	return nil
}

// sample is one redis-benchmark run.
type sample struct {
	rps     float64
	cpu     float64  // the server's CPU seconds per million requests (0: unknown)
	backing float64  // the same of its backing redis-server (-backend redis)
	client  float64  // the same of redis-benchmark, the load generator sharing the machine
	polling float64  // of cpu, the time bloomery's event loops spent busy polling (INFO busy_poll_us)
	savers  []string // the servers that did background persistence during the run (saves.go)
	idle    float64  // cores of the machine nobody used during the run (0: unknown)
}

func compare(o options, targets []*target, pipe int) error {
	got := map[string][]sample{} // case name + "/" + target name
	for r := range o.rounds {
		for _, c := range o.cases {
			for i := range targets {
				t := targets[(i+r)%len(targets)]
				cmd := c.command(t)
				if cmd == "" {
					continue
				}
				before := persistStates(targets)
				s, err := runBenchmark(t, cmd, o.requests, o.clients, pipe)
				if err != nil {
					return err
				}
				s.savers = savers(targets, before, persistStates(targets))
				got[c.name+"/"+t.name] = append(got[c.name+"/"+t.name], s)
			}
		}
	}
	fmt.Printf("\n## -P %d\n\n| case | server | command | median req/s | CPU s / 1M req | backing Redis CPU s / 1M req | redis-benchmark CPU s / 1M req | redis-benchmark busy (its ceiling) | of which polling | idle cores (machine) | ratio to bloomery (median of rounds) | the same, rounds without a save | req/s per round | saves during its runs |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n", pipe)
	for _, c := range o.cases {
		ours := got[c.name+"/bloomery"]
		for _, t := range targets {
			s := got[c.name+"/"+t.name]
			if len(s) == 0 {
				continue
			}
			ratio, quiet := "–", "–"
			if t.name != "bloomery" && len(ours) == len(s) {
				var rs, qs []float64
				for i := range s {
					rs = append(rs, ours[i].rps/s[i].rps)
					if len(ours[i].savers) == 0 && len(s[i].savers) == 0 {
						qs = append(qs, ours[i].rps/s[i].rps)
					}
				}
				ratio = fmt.Sprintf("%.2f (%s)", bench.Median(rs), fmtFloats(rs, "%.2f"))
				if len(qs) > 0 {
					quiet = fmt.Sprintf("%.2f (%d of %d)", bench.Median(qs), len(qs), len(rs))
				}
			}
			backing := "–"
			if t.backingPid != 0 {
				backing = fmt.Sprintf("%.2f", bench.Median(field(s, func(x sample) float64 { return x.backing })))
			}
			polling := "–"
			if strings.HasPrefix(t.name, "bloomery") {
				polling = fmt.Sprintf("%.2f", bench.Median(field(s, func(x sample) float64 { return x.polling })))
			}
			client := bench.Median(field(s, func(x sample) float64 { return x.client }))
			fmt.Printf("| %s | %s | `%s` | %.0f | %.2f | %s | %.2f | %s | %s | %.2f | %s | %s | %s | %s |\n", c.name, t.name, c.command(t),
				bench.Median(field(s, func(x sample) float64 { return x.rps })),
				bench.Median(field(s, func(x sample) float64 { return x.cpu })), backing,
				client, clientBusy(s, client), polling, bench.Median(field(s, func(x sample) float64 { return x.idle })), ratio, quiet,
				fmtFloats(field(s, func(x sample) float64 { return x.rps / 1000 }), "%.0fk"), fmtSavers(s))
		}
	}
	return nil
}

// clientBusy is how much of one core redis-benchmark, one thread, was
// busy in the rounds of s (the median of rate × its CPU per request),
// and the rate it would reach busy all the time at its median CPU per
// request (client, µs): at -P 1 that ceiling, measured in the same run,
// bounds what any server can be measured at (docs/BENCHMARKS.md, "What
// bounds -P 1: the client's core").
func clientBusy(s []sample, client float64) string {
	if client <= 0 {
		return "–"
	}
	busy := bench.Median(field(s, func(x sample) float64 { return x.rps * x.client / 1e6 }))
	return fmt.Sprintf("%.2f (%.0fk)", busy, 1e3/client)
}

// keyspace is redis-benchmark's -r, plus the run's number: it seeds its
// random keys with time(NULL) ^ getpid(), which two runs a few seconds
// and a few processes apart can share, and a run that repeats an earlier
// run's keys adds nothing (a server that answers "not new" without a
// write then looks several times faster). Another modulus gives other
// keys from the same seed.
const keyspace = 100_000_000

// runs counts the redis-benchmark runs of this process.
var runs atomic.Int64

// runBenchmark runs one redis-benchmark case against t and measures t's
// CPU time meanwhile, and redis-benchmark's own: at -P 1 the client
// spends more CPU per request than either server, and with the two on
// two cores their sum bounds the rate (docs/BENCHMARKS.md).
func runBenchmark(t *target, command string, requests, clients, pipe int) (sample, error) {
	host, port, _ := net.SplitHostPort(t.addr)
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(clients), "-n", strconv.Itoa(requests),
		"-P", strconv.Itoa(pipe), "-r", strconv.Itoa(keyspace + int(runs.Add(1))), "--csv"}
	args = append(args, strings.Fields(command)...)
	poll0 := busyPollMicros(t)
	mach0, okm0 := redisbench.MachineCPU()
	start := time.Now()
	cpu0, ok0 := redisbench.PidCPU(t.pid)
	back0, okb0 := redisbench.PidCPU(t.backingPid)
	rb := exec.Command("redis-benchmark", args...)
	out, err := rb.Output()
	cpu1, ok1 := redisbench.PidCPU(t.pid)
	wall := time.Since(start)
	mach1, okm1 := redisbench.MachineCPU()
	back1, okb1 := redisbench.PidCPU(t.backingPid)
	poll1 := busyPollMicros(t)
	if err != nil {
		return sample{}, fmt.Errorf("%s: redis-benchmark %s: %w", t.name, command, err)
	}
	recs, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(recs) < 2 || len(recs[1]) < 2 {
		return sample{}, fmt.Errorf("%s: redis-benchmark %s: unexpected output %q", t.name, command, out)
	}
	rps, err := strconv.ParseFloat(recs[1][1], 64)
	s := sample{rps: rps}
	if ok0 && ok1 {
		s.cpu = (cpu1 - cpu0).Seconds() * 1e6 / float64(requests)
	}
	if t.backingPid != 0 && okb0 && okb1 {
		s.backing = (back1 - back0).Seconds() * 1e6 / float64(requests)
	}
	s.polling = (poll1 - poll0) / float64(requests)
	if okm0 && okm1 && wall > 0 {
		s.idle = max(0, float64(runtime.NumCPU())-float64(mach1-mach0)/float64(wall))
	}
	if ps := rb.ProcessState; ps != nil {
		s.client = (ps.UserTime() + ps.SystemTime()).Seconds() * 1e6 / float64(requests)
	}
	return s, err
}

// busyPollMicros is INFO's busy_poll_us of t: the time its event loops
// have spent polling for input rather than sleeping (0 for a server
// without it, such as redis-server).
func busyPollMicros(t *target) float64 {
	n, _ := strconv.ParseFloat(infoFields(t, "stats")["busy_poll_us"], 64)
	return n
}

// infoFields is t's INFO section as fields (empty when it does not
// answer).
func infoFields(t *target, section string) map[string]string {
	cl := redis.NewClient(&redis.Options{Addr: t.addr, Protocol: 2})
	defer cl.Close()
	info, err := cl.Info(context.Background(), section).Result()
	if err != nil {
		return nil
	}
	return redisbench.InfoFields(info)
}

// prefill gives the exists cases something to find: 1e6 items in bf (in
// set for plain redis-server), and with cf, 1e6 in the cuckoo filter cf
// of cfCapacity.
func prefill(ctx context.Context, t *target, cf bool) error {
	cl := redis.NewClient(&redis.Options{Addr: t.addr})
	defer cl.Close()
	if !t.module {
		return fillMillion(ctx, cl, "SADD", "set")
	}
	if err := cl.Do(ctx, "BF.RESERVE", "bf", 0.01, 20_000_000).Err(); err != nil { // within the default 128 MiB per filter
		return err
	}
	if err := fillMillion(ctx, cl, "BF.MADD", "bf"); err != nil || !cf {
		return err
	}
	if err := cl.Do(ctx, "CF.RESERVE", "cf", cfCapacity).Err(); err != nil {
		return err
	}
	return fillMillion(ctx, cl, "CF.INSERT", "cf", "NOCREATE", "ITEMS")
}

// fillMillion sends cmd with the items 0, 97, 2·97, … (10⁶ of them) in
// calls of 1000 after the arguments head.
func fillMillion(ctx context.Context, cl *redis.Client, head ...any) error {
	for i := 0; i < 1_000_000; i += 1000 {
		args := append([]any(nil), head...)
		for j := i; j < i+1000; j++ {
			args = append(args, strconv.Itoa(j*97))
		}
		if err := cl.Do(ctx, args...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// reportCuckoo prints each server's CF.INFO of cf after the runs: the
// sub-filters and items, so that a table says whether a growth changed
// what CF.EXISTS reads.
func reportCuckoo(ctx context.Context, targets []*target) error {
	fmt.Println()
	for _, t := range targets {
		if !t.module {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: t.addr})
		info, err := cl.Do(ctx, "CF.INFO", "cf").Result() // a map in RESP3, a list in RESP2
		cl.Close()
		if err != nil {
			return fmt.Errorf("%s: CF.INFO: %w", t.name, err)
		}
		fmt.Printf("# %s: CF.INFO cf after the runs: %v\n", t.name, info)
	}
	return nil
}

func field(s []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out
}

func fmtFloats(v []float64, format string) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprintf(format, x))
	}
	return strings.Join(parts, " ")
}
