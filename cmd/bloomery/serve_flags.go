package main

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/bloomery/bloom/server"
)

// checkServeFlags refuses the serve flags that make no sense, naming the
// flag (server.New checks the Config too, naming its fields; zero means
// "the default" there, but here every flag has its default already).
func checkServeFlags(cfg server.Config) error {
	for _, addr := range []struct{ flag, v string }{{"--addr", cfg.Addr}, {"--metrics-addr", cfg.MetricsAddr}} {
		if _, _, err := net.SplitHostPort(addr.v); err != nil && (addr.v != "" || addr.flag == "--addr") {
			return fmt.Errorf("%s %q: want host:port, e.g. 127.0.0.1:6380 (:port is every interface)", addr.flag, addr.v)
		}
	}
	bulk, query := cfg.Limits.MaxBulk, cfg.Limits.MaxQueryBuffer
	for _, c := range []struct {
		bad bool
		msg string
	}{
		{cfg.Dir == "", `--dir is empty: give a directory, or "-" to keep nothing on disk`},
		{cfg.AppendFsync != "always" && cfg.AppendFsync != "everysec" && cfg.AppendFsync != "no",
			fmt.Sprintf("--appendfsync %q: want always, everysec or no", cfg.AppendFsync)},
		{cfg.MaxClients < 1, fmt.Sprintf("--maxclients %d: want at least 1", cfg.MaxClients)},
		{cfg.EventLoops < 0, fmt.Sprintf("--event-loops %d: want 0 (automatic) or more", cfg.EventLoops)},
		{cfg.BusyPoll < 0 || cfg.BusyPoll > server.MaxBusyPoll,
			fmt.Sprintf("--busy-poll %v: want 0 (never) up to %v", cfg.BusyPoll, server.MaxBusyPoll)},
		{cfg.PollNap < 0 || cfg.PollNap > server.MaxBusyPoll,
			fmt.Sprintf("--poll-nap %v: want 0 (never) up to %v", cfg.PollNap, server.MaxBusyPoll)},
		{cfg.IdleTimeout < 0, fmt.Sprintf("--timeout %v: want 0 (never) or more", cfg.IdleTimeout)},
		{cfg.WriteTimeout <= 0, fmt.Sprintf("--write-timeout %v: want more than 0", cfg.WriteTimeout)},
		{bulk < server.MinBufferLimit, fmt.Sprintf("--proto-max-bulk-len %d: want at least 1mb (Redis's minimum)", bulk)},
		{query < server.MinBufferLimit, fmt.Sprintf("--client-query-buffer-limit %d: want at least 1mb (Redis's minimum)", query)},
		{bulk > query, fmt.Sprintf("--proto-max-bulk-len %d is above --client-query-buffer-limit %d: "+
			"such an argument could never be received", bulk, query)},
		{cfg.Pprof && cfg.MetricsAddr == "", "--pprof needs --metrics-addr (the profiles are served there)"},
		{cfg.FilterLayout != server.LayoutBloomery && cfg.FilterLayout != server.LayoutRedisBloom,
			fmt.Sprintf("--filter-layout %q: want %s or %s", cfg.FilterLayout, server.LayoutBloomery, server.LayoutRedisBloom)},
		{cfg.FilterLayout == server.LayoutRedisBloom && cfg.Backend != "memory",
			"--filter-layout redisbloom needs --backend memory (the Redis backend keeps Bloomery's layout only)"},
	} {
		if c.bad {
			return fmt.Errorf("%s", c.msg)
		}
	}
	return nil
}

// offIfZero is server.Config.BusyPoll or PollNap for a checked
// --busy-poll or --poll-nap value: 0 there means never, which the Config
// says with a negative value (its zero means the default).
func offIfZero(flag time.Duration) time.Duration {
	if flag == 0 {
		return -1
	}
	return flag
}

// mirrorBytes is --redis-mirror as Config.RedisMirrorBytes: 0 means
// none (a negative Config value: the Config's zero is its default).
func mirrorBytes(flag bytesValue) int64 {
	if flag == 0 {
		return -1
	}
	return int64(min(uint64(flag), math.MaxInt64))
}

// bytesValue is a size in bytes with Redis's units: 100, 1k (1000), 1kb
// (1024), 5m, 5mb, 2g, 2gb.
type bytesValue uint64

func (v *bytesValue) String() string { return formatBytes(uint64(*v)) }
func (v *bytesValue) Type() string   { return "bytes" }
func (v *bytesValue) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*v = bytesValue(n)
	return nil
}

// parseBytes reads a size with Redis's units.
func parseBytes(s string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := uint64(1)
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || n > (1<<63)/mult {
		return 0, fmt.Errorf("not a size (want e.g. 1048576, 100mb or 2gb)")
	}
	return n * mult, nil
}

// formatBytes writes n in the largest binary unit that divides it.
func formatBytes(n uint64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"tb", 40}, {"gb", 30}, {"mb", 20}, {"kb", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatUint(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatUint(n, 10)
}

// limitValue is a memory limit: a size (bytesValue's units), "auto" (0,
// the default: the server's own choice) or "0"/"unlimited"
// (server.Unlimited: none).
type limitValue uint64

func (v *limitValue) String() string {
	switch uint64(*v) {
	case 0:
		return "auto"
	case server.Unlimited:
		return "unlimited"
	}
	return formatBytes(uint64(*v))
}

func (v *limitValue) Type() string { return "bytes" }

func (v *limitValue) Set(s string) error {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "auto":
		*v = 0
		return nil
	case "unlimited", "none":
		*v = limitValue(server.Unlimited)
		return nil
	}
	n, err := parseBytes(s)
	if err != nil {
		return fmt.Errorf("not a size (want e.g. 100mb or 2gb, auto, or 0 or unlimited for none)")
	}
	if n == 0 {
		n = server.Unlimited
	}
	*v = limitValue(n)
	return nil
}
