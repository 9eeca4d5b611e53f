package server

import (
	"math/bits"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Per-command counters: calls, errors and execution time, kept in shards
// of plain atomic counters (one shard per event loop, one for the
// connections served by goroutines) and summed only when /metrics is
// scraped or INFO asks. An uncontended atomic add costs a few
// nanoseconds; Prometheus's own vectors cost a contended add per counter
// and per histogram field on every command.

// latencyBuckets are the upper bounds of the execution time histogram,
// 1 µs × 4^i for i = 0…11 (the last bucket, +Inf, is implicit).
var latencyBuckets = prometheus.ExponentialBuckets(1e-6, 4, 12)

// cmdCounts are one shard's counters of one command.
type cmdCounts struct {
	calls, errors atomic.Uint64
	timed         [13]atomic.Uint64 // executions by latencyBuckets bucket (12: over the last bound)
	nanos         atomic.Uint64     // their total time
}

// statShard is one shard of the counters.
type statShard struct {
	cmds      []cmdCounts // by command.idx
	processed atomic.Int64
	busyPolls atomic.Int64 // an event loop's turns whose input a busy poll found (loop_poll_linux.go)
	pollNanos atomic.Int64 // and the time it spent polling
	pollNaps  atomic.Int64 // the naps it took instead of polling
}

// latencyBucket is the index of the first bucket of latencyBuckets whose
// bound is at least d nanoseconds (12 past the last).
func latencyBucket(d uint64) int {
	q := (d + 999) / 1000 // µs, rounded up
	if q <= 1 {
		return 0
	}
	return min((bits.Len64(q-1)+1)/2, 12) // the smallest i with 4^i ≥ q
}

// observe counts one execution of d nanoseconds.
func (cc *cmdCounts) observe(d uint64) {
	cc.timed[latencyBucket(d)].Add(1)
	cc.nanos.Add(d)
}

// commandCollector exports the shards as bloomery_commands_total,
// bloomery_command_errors_total and bloomery_command_duration_seconds,
// labelled by command.
type commandCollector struct{ m *metrics }

var (
	callsDesc  = prometheus.NewDesc("bloomery_commands_total", "Commands processed, by command.", []string{"command"}, nil)
	errorsDesc = prometheus.NewDesc("bloomery_command_errors_total",
		"Commands answered with an error, by command.", []string{"command"}, nil)
	latencyDesc = prometheus.NewDesc("bloomery_command_duration_seconds",
		"Time to execute a command (excluding network and fsync), by command.", []string{"command"}, nil)
)

func (commandCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- callsDesc
	ch <- errorsDesc
	ch <- latencyDesc
}

func (cc commandCollector) Collect(ch chan<- prometheus.Metric) {
	for _, cmd := range cc.m.cmds {
		var calls, errs, nanos uint64
		var timed [13]uint64
		for _, sh := range cc.m.shards {
			n := &sh.cmds[cmd.idx]
			calls += n.calls.Load()
			errs += n.errors.Load()
			nanos += n.nanos.Load()
			for i := range timed {
				timed[i] += n.timed[i].Load()
			}
		}
		ch <- prometheus.MustNewConstMetric(callsDesc, prometheus.CounterValue, float64(calls), cmd.name)
		ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(errs), cmd.name)
		cumulative := make(map[float64]uint64, len(latencyBuckets))
		count := uint64(0)
		for i, bound := range latencyBuckets {
			count += timed[i]
			cumulative[bound] = count
		}
		count += timed[12]
		ch <- prometheus.MustNewConstHistogram(latencyDesc, count, float64(nanos)/1e9, cumulative, cmd.name)
	}
}
