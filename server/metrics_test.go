package server

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestMetrics: the registry reports commands, errors, latency and the
// backend's figures after real traffic.
func TestMetrics(t *testing.T) {
	srv, addr := startServer(t, Config{Dir: t.TempDir()})
	c := dialRaw(t, addr)
	c.do("BF.RESERVE", "m", "0.01", "1000")
	c.do("BF.ADD", "m", "a")
	c.do("BF.ADD", "m", "b")
	c.do("BF.ADD") // arity error
	c.do("NOSUCH")
	families, err := srv.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	labelled := func(name, command string) *dto.Metric {
		for _, m := range byName[name].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "command" && l.GetValue() == command {
					return m
				}
			}
		}
		t.Fatalf("%s{command=%q} missing", name, command)
		return nil
	}
	if got := labelled("bloomery_commands_total", "bf.add").GetCounter().GetValue(); got != 3 {
		t.Errorf("bf.add calls %v, want 3 (two run, one refused)", got)
	}
	if got := labelled("bloomery_command_errors_total", "bf.add").GetCounter().GetValue(); got != 1 {
		t.Errorf("bf.add errors %v, want 1", got)
	}
	if got := labelled("bloomery_command_duration_seconds", "bf.add").GetHistogram().GetSampleCount(); got != 2 {
		t.Errorf("bf.add latency samples %v, want 2", got)
	}
	gauge := func(name string) float64 {
		f := byName[name]
		if f == nil || len(f.GetMetric()) != 1 {
			t.Fatalf("%s missing", name)
		}
		return f.GetMetric()[0].GetGauge().GetValue()
	}
	if got := byName["bloomery_unknown_commands_total"].GetMetric()[0].GetCounter().GetValue(); got != 1 {
		t.Errorf("unknown commands %v, want 1", got)
	}
	if got := gauge("bloomery_keys"); got != 1 {
		t.Errorf("keys %v, want 1", got)
	}
	st := srv.backend.Stats()
	if got := gauge("bloomery_filter_bytes"); got != float64(st.FilterBytes) || got == 0 {
		t.Errorf("filter bytes %v, want %d", got, st.FilterBytes)
	}
	if got := gauge("bloomery_persistence_aof_enabled"); got != 1 {
		t.Errorf("aof_enabled %v, want 1", got)
	}
	if got := gauge("bloomery_connected_clients"); got < 1 {
		t.Errorf("connected clients %v, want ≥ 1", got)
	}
}

// TestCommandTimeExcludesWaits: a command is timed from the end of the
// one before it in the same input, never across a wait for input: a
// client that pauses between two commands (on either way of serving
// connections) does not see the pause charged to the second, and a
// pipeline's commands are each charged.
func TestCommandTimeExcludesWaits(t *testing.T) {
	srv, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	c.do("BF.ADD", "k", "a")
	c.do("PING")
	time.Sleep(300 * time.Millisecond)
	c.do("PING")
	c.send(encodeCommand("PING") + encodeCommand("BF.EXISTS", "k", "a") + encodeCommand("PING"))
	for range 3 {
		readRawReply(c.br)
	}
	families, err := srv.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "bloomery_command_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "command" && l.GetValue() == "ping" {
					h := m.GetHistogram()
					if h.GetSampleCount() != 4 || h.GetSampleSum() >= 0.15 {
						t.Fatalf("ping: %d samples taking %vs in all; want 4, far below the 0.3 s pause", h.GetSampleCount(), h.GetSampleSum())
					}
					return
				}
			}
		}
	}
	t.Fatal("no duration histogram for ping")
}
