package server

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus metrics, on their own registry
// (served by --metrics-addr at /metrics). The per-command counters are
// in shards (metrics_commands.go): shards[0] for connections served by
// goroutines, one per event loop after it.
type metrics struct {
	reg            *prometheus.Registry
	cmds           []*command // every command and subcommand, by idx
	shards         []*statShard
	unknown        prometheus.Counter
	protocolErrors prometheus.Counter
	authFailures   prometheus.Counter
}

// newMetrics registers the metrics of s, with shards counter shards.
func newMetrics(s *Server, shards int) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		unknown: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "bloomery", Name: "unknown_commands_total",
			Help: "Commands refused as unknown."}),
		protocolErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "bloomery", Name: "protocol_errors_total",
			Help: "Connections closed for a protocol error or the query buffer limit."}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "bloomery", Name: "auth_failures_total",
			Help: "Failed AUTH or HELLO AUTH attempts."}),
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "bloomery", Name: name, Help: help}, f)
	}
	for range shards {
		m.shards = append(m.shards, &statShard{})
	}
	m.reg.MustRegister(commandCollector{m}, m.unknown, m.protocolErrors, m.authFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gauge("connected_clients", "Open client connections.", func() float64 { return float64(s.stats.clients.Load()) }),
		gauge("maxmemory_bytes", "The memory limit for all filters' bytes together (0: none).",
			func() float64 { return float64(shown(s.cfg.MaxMemory)) }),
		gauge("maxmemory_per_filter_bytes", "The memory limit for one filter's bytes (0: none).",
			func() float64 { return float64(shown(s.cfg.MaxFilterBytes)) }),
		backendCollector{s},
	)
	return m
}

// bind numbers cmd for the counters.
func (m *metrics) bind(cmd *command) {
	cmd.idx = len(m.cmds)
	m.cmds = append(m.cmds, cmd)
}

// sizeShards gives each shard counters for every command bound; it is
// called once, when the command table is complete.
func (m *metrics) sizeShards() {
	for _, sh := range m.shards {
		sh.cmds = make([]cmdCounts, len(m.cmds))
	}
}

// processed is INFO's total_commands_processed.
func (m *metrics) processed() int64 {
	n := int64(0)
	for _, sh := range m.shards {
		n += sh.processed.Load()
	}
	return n
}

// busyPolls is INFO's busy_poll_wakeups, busy_poll_us and busy_poll_naps:
// the event loops' turns whose input a busy poll or a nap found, each a
// sleep and a wake-up saved, the microseconds spent polling (CPU time
// that the loops' work did not need), and the naps taken instead of
// polling (docs/DESIGN.md §8, "Busy polling").
func (m *metrics) busyPolls() (wakeups, micros, naps int64) {
	for _, sh := range m.shards {
		wakeups += sh.busyPolls.Load()
		micros += sh.pollNanos.Load()
		naps += sh.pollNaps.Load()
	}
	return wakeups, micros / 1000, naps
}

// backendCollector exports the backend's figures from one Stats call per
// scrape: bloomery_keys, bloomery_filter_bytes, and the numeric fields of
// the INFO persistence section as gauges bloomery_persistence_<name>.
type backendCollector struct{ s *Server }

var (
	keysDesc        = prometheus.NewDesc("bloomery_keys", "Filters in the keyspace.", nil, nil)
	filterBytesDesc = prometheus.NewDesc("bloomery_filter_bytes", "Bytes of all filters' bit arrays.", nil, nil)
)

func (backendCollector) Describe(chan<- *prometheus.Desc) {} // unchecked: persistence fields vary by backend

func (b backendCollector) Collect(ch chan<- prometheus.Metric) {
	st := b.s.backend.Stats()
	ch <- prometheus.MustNewConstMetric(keysDesc, prometheus.GaugeValue, float64(st.Keys))
	ch <- prometheus.MustNewConstMetric(filterBytesDesc, prometheus.GaugeValue, float64(st.FilterBytes))
	for _, f := range append(b.s.persistInfo(), st.Fields...) {
		v, ok := parseFloat([]byte(f.value))
		if !ok {
			continue
		}
		desc := prometheus.NewDesc("bloomery_persistence_"+f.name, "INFO persistence field "+f.name+".", nil, nil)
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
	}
}

// stats are the counters INFO stats reports (with metrics.processed).
type stats struct {
	connections  atomic.Int64
	errorReplies atomic.Int64
	rejected     atomic.Int64
	expired      atomic.Int64
	clients      atomic.Int64
	authFailures atomic.Int64 // failed AUTH and HELLO AUTH
}

// reset zeroes the counters CONFIG RESETSTAT resets, with the shards'
// count of commands processed.
func (st *stats) reset(m *metrics) {
	for _, sh := range m.shards {
		sh.processed.Store(0)
	}
	st.connections.Store(0)
	st.errorReplies.Store(0)
	st.rejected.Store(0)
	st.expired.Store(0)
	st.authFailures.Store(0)
}
