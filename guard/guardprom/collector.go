// Package guardprom exports a guard.Guard's counters to Prometheus, in a
// package of its own so that package guard does not depend on the
// Prometheus client (as go-redis keeps its metrics in extra/).
//
// Register one Collector per Guard; every metric is a counter read from
// Guard.Stats at scrape time, so collecting costs nothing between
// scrapes and a scrape never blocks a Get.
package guardprom

import (
	"github.com/bloomery/bloom/guard"
	"github.com/prometheus/client_golang/prometheus"
)

// StatsSource is what a Collector reads: a *guard.Guard of any value type.
type StatsSource interface {
	Stats() guard.Stats
}

// Collector is a prometheus.Collector of one Guard's Stats.
type Collector struct {
	src   StatsSource
	descs []metric
}

type metric struct {
	desc  *prometheus.Desc
	value func(guard.Stats) uint64
}

// NewCollector returns a collector of src's counters, named
// <namespace>_guard_<counter>_total and labelled guard=name, so that
// several Guards of one process can be told apart.
func NewCollector(namespace, name string, src StatsSource) *Collector {
	labels := prometheus.Labels{"guard": name}
	c := &Collector{src: src}
	add := func(counter, help string, value func(guard.Stats) uint64) {
		fq := prometheus.BuildFQName(namespace, "guard", counter+"_total")
		c.descs = append(c.descs, metric{prometheus.NewDesc(fq, help, nil, labels), value})
	}
	add("requests", "Get calls.", func(s guard.Stats) uint64 { return s.Requests })
	add("absent", "Gets answered not found by the filter alone.", func(s guard.Stats) uint64 { return s.Absent })
	add("cache_hits", "Gets answered from the cache.", func(s guard.Stats) uint64 { return s.CacheHits })
	add("negative_hits", "Gets answered not found by the negative cache.", func(s guard.Stats) uint64 { return s.NegativeHits })
	add("loaded", "Gets answered by a load they started.", func(s guard.Stats) uint64 { return s.Loaded })
	add("joined", "Gets that waited for another Get's load.", func(s guard.Stats) uint64 { return s.Joined })
	add("canceled", "Gets whose context ended while they waited for a load.", func(s guard.Stats) uint64 { return s.Canceled })
	add("loads", "Loads from the source of truth.", func(s guard.Stats) uint64 { return s.Loads })
	add("false_positives", "Loads that found nothing: false positives of the filter.", func(s guard.Stats) uint64 { return s.FalsePositives })
	add("load_errors", "Loads that failed.", func(s guard.Stats) uint64 { return s.LoadErrors })
	add("filter_errors", "Membership errors, worked around by asking the source.", func(s guard.Stats) uint64 { return s.FilterErrors })
	add("cache_errors", "Cache errors, treated as misses.", func(s guard.Stats) uint64 { return s.CacheErrors })
	add("added", "IDs added to the filter by writes.", func(s guard.Stats) uint64 { return s.Added })
	add("removed", "IDs deleted from the filter.", func(s guard.Stats) uint64 { return s.Removed })
	add("rebuilds", "Completed rebuilds of the filter.", func(s guard.Stats) uint64 { return s.Rebuilds })
	add("rebuild_errors", "Failed rebuilds of the filter.", func(s guard.Stats) uint64 { return s.RebuildErrors })
	return c
}

// Describe sends the descriptions of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.descs {
		ch <- m.desc
	}
}

// Collect reads the Guard's Stats once and sends every counter.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	for _, m := range c.descs {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(m.value(s)))
	}
}
