package server

import (
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/resp"
)

// TestConfigRefusesNonsense: New refuses values that make no sense with
// an error naming the field (they were silently replaced by defaults, or
// accepted and then closed every connection).
func TestConfigRefusesNonsense(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxClients: -5}, "MaxClients is negative"},
		{Config{IdleTimeout: -time.Second}, "IdleTimeout is negative"},
		{Config{WriteTimeout: -time.Second}, "WriteTimeout is negative"},
		{Config{BusyPoll: 2 * time.Millisecond}, "BusyPoll 2ms is above the maximum, 1ms"},
		{Config{PollNap: 2 * time.Millisecond}, "PollNap 2ms is above the maximum, 1ms"},
		{Config{AOFRewriteMinSize: -1}, "AOFRewriteMinSize is negative"},
		{Config{AOFRewritePercent: -1}, "AOFRewritePercent is negative"},
		{Config{Limits: resp.Limits{MaxQueryBuffer: 1}}, "Limits.MaxQueryBuffer 1 is below the minimum"},
		{Config{Limits: resp.Limits{MaxQueryBuffer: MinBufferLimit - 1}}, "Limits.MaxQueryBuffer 1048575 is below the minimum"},
		{Config{Limits: resp.Limits{MaxQueryBuffer: -1}}, "Limits.MaxQueryBuffer -1 is below the minimum"},
		{Config{Limits: resp.Limits{MaxBulk: 1000}}, "Limits.MaxBulk 1000 is below the minimum"},
		{Config{Limits: resp.Limits{MaxArgs: -1}}, "Limits.MaxArgs is negative"},
		{Config{Limits: resp.Limits{MaxInline: -1}}, "Limits.MaxInline is negative"},
		{Config{Limits: resp.Limits{MaxQueryBuffer: 2 << 20, MaxBulk: 4 << 20}}, "Limits.MaxBulk 4194304 is above Limits.MaxQueryBuffer 2097152"},
		{Config{Limits: resp.Limits{MaxQueryBuffer: 256 << 20}}, "Limits.MaxBulk 536870912 is above Limits.MaxQueryBuffer 268435456"},
		{Config{AppendFsync: "sometimes"}, `AppendFsync "sometimes"`},
		{Config{Backend: "mysql://x"}, `backend "mysql://x"`},
		{Config{Pprof: true}, "Pprof needs MetricsAddr"},
	} {
		c.cfg.Dir, c.cfg.Logger = "-", discardLogger()
		srv, err := New(c.cfg)
		if err == nil {
			srv.Shutdown(t.Context())
			t.Errorf("New(%+v) accepted", c.cfg)
			continue
		}
		if !strings.HasPrefix(err.Error(), "server: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v; want an error containing %q", c.cfg, err, c.want)
		}
	}
	// The smallest sensible values pass.
	srv, err := New(Config{Dir: "-", Logger: discardLogger(), MaxClients: 1, IdleTimeout: time.Nanosecond, WriteTimeout: time.Nanosecond,
		Limits: resp.Limits{MaxBulk: MinBufferLimit, MaxQueryBuffer: MinBufferLimit}, MaxMemory: 1, MaxFilterBytes: 1})
	if err != nil {
		t.Fatalf("New with the smallest values: %v", err)
	}
	srv.Shutdown(t.Context())
}

// TestInfoShowsEffectiveLimits: INFO and CONFIG GET show the limits in
// force, defaults included (INFO showed maxmemory_per_filter:0 while the
// limit was 16 GiB), and 0 for none.
func TestInfoShowsEffectiveLimits(t *testing.T) {
	wantMax, wantFrom := defaultMaxMemory(systemMemory.read())
	for _, c := range []struct {
		name              string
		cfg               Config
		maxmem, perFilter uint64
		from              string
	}{
		{"defaults", Config{}, shown(wantMax), DefaultMaxFilterBytes, wantFrom},
		{"configured", Config{MaxMemory: 3 << 30, MaxFilterBytes: 1 << 30}, 3 << 30, 1 << 30, "configured"},
		{"unlimited", Config{MaxMemory: Unlimited, MaxFilterBytes: Unlimited}, 0, 0, "unlimited (configured)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, addr := startServer(t, c.cfg)
			r := dialRaw(t, addr)
			info := infoText(t, r, "memory")
			for name, want := range map[string]string{
				"maxmemory":            strconv.FormatUint(c.maxmem, 10),
				"maxmemory_per_filter": strconv.FormatUint(c.perFilter, 10),
				"maxmemory_from":       c.from,
			} {
				if got := fieldOf(info, name); got != want {
					t.Errorf("INFO %s = %q, want %q", name, got, want)
				}
			}
			if got := r.do("CONFIG", "GET", "maxmemory"); got != rawArray(rawBulk("maxmemory"), rawBulk(strconv.FormatUint(c.maxmem, 10))) {
				t.Errorf("CONFIG GET maxmemory: %q, want %d", got, c.maxmem)
			}
			if c.name == "defaults" && wantMax != Unlimited && (c.maxmem == 0 || fieldOf(info, "total_system_memory") == "") {
				t.Errorf("default maxmemory %d, total_system_memory %q", c.maxmem, fieldOf(info, "total_system_memory"))
			}
		})
	}
	_, addr := startServer(t, Config{})
	got := dialRaw(t, addr).do("CONFIG", "GET", "proto-max-bulk-len", "client-query-buffer-limit", "timeout")
	want := rawArray(rawBulk("timeout"), rawBulk("0"), rawBulk("proto-max-bulk-len"), rawBulk("536870912"),
		rawBulk("client-query-buffer-limit"), rawBulk("1073741824"))
	if got != want {
		t.Errorf("CONFIG GET of the input limits: %q, want %q (the defaults in force)", got, want)
	}
}

func TestRateLog(t *testing.T) {
	r := rateLog{every: time.Second}
	t0 := time.Unix(1000, 0)
	type step struct {
		at   time.Duration
		ok   bool
		lost int64
	}
	for i, s := range []step{
		{0, true, 1}, {time.Millisecond, false, 0}, {500 * time.Millisecond, false, 0},
		{999 * time.Millisecond, false, 0}, {time.Second, true, 4}, {1500 * time.Millisecond, false, 0},
		{5 * time.Second, true, 2}, {5*time.Second + 1, false, 0},
	} {
		if ok, n := r.event(t0.Add(s.at)); ok != s.ok || n != s.lost {
			t.Errorf("event %d at %v: %v, %d; want %v, %d", i, s.at, ok, n, s.ok, s.lost)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
