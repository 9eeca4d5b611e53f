package server

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus metrics, on their own registry
// (served by --metrics-addr at /metrics).
type metrics struct {
	reg            *prometheus.Registry
	calls          *prometheus.CounterVec
	errors         *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	unknown        prometheus.Counter
	protocolErrors prometheus.Counter
	authFailures   prometheus.Counter
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "bloomery", Name: "commands_total",
			Help: "Commands processed, by command."}, []string{"command"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "bloomery", Name: "command_errors_total",
			Help: "Commands answered with an error, by command."}, []string{"command"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "bloomery", Name: "command_duration_seconds",
			Help:    "Time to execute a command (excluding network and fsync), by command.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12)}, []string{"command"}),
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
	m.reg.MustRegister(m.calls, m.errors, m.latency, m.unknown, m.protocolErrors, m.authFailures,
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

// bind resolves cmd's metrics.
func (m *metrics) bind(cmd *command) {
	cmd.calls = m.calls.WithLabelValues(cmd.name)
	cmd.errors = m.errors.WithLabelValues(cmd.name)
	cmd.latency = m.latency.WithLabelValues(cmd.name)
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
	st := b.s.store.Stats()
	ch <- prometheus.MustNewConstMetric(keysDesc, prometheus.GaugeValue, float64(st.Keys))
	ch <- prometheus.MustNewConstMetric(filterBytesDesc, prometheus.GaugeValue, float64(st.FilterBytes))
	for _, f := range st.Persistence {
		v, ok := parseFloat([]byte(f.value))
		if !ok {
			continue
		}
		desc := prometheus.NewDesc("bloomery_persistence_"+f.name, "INFO persistence field "+f.name+".", nil, nil)
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
	}
}

// stats are the counters INFO stats reports.
type stats struct {
	connections  atomic.Int64
	commands     atomic.Int64
	errorReplies atomic.Int64
	rejected     atomic.Int64
	expired      atomic.Int64
	clients      atomic.Int64
	authFailures atomic.Int64 // failed AUTH and HELLO AUTH
}

// reset zeroes the counters CONFIG RESETSTAT resets.
func (st *stats) reset() {
	st.connections.Store(0)
	st.commands.Store(0)
	st.errorReplies.Store(0)
	st.rejected.Store(0)
	st.expired.Store(0)
	st.authFailures.Store(0)
}
