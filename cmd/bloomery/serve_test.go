package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom/server"
)

// TestServeRefusesBadFlags: serve refuses nonsense with a message naming
// the flag, before it opens anything (--maxclients -5 became 10000,
// --client-query-buffer-limit 1 closed every connection, --timeout -1s
// was accepted).
func TestServeRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--maxclients", "0"}, "--maxclients 0: want at least 1"},
		{[]string{"--maxclients", "-5"}, "--maxclients -5: want at least 1"},
		{[]string{"--timeout", "-1s"}, "--timeout -1s: want 0 (never) or more"},
		{[]string{"--event-loops", "-2"}, "--event-loops -2: want 0 (automatic) or more"},
		{[]string{"--busy-poll", "-1us"}, "--busy-poll -1µs: want 0 (never) up to 1ms"},
		{[]string{"--busy-poll", "2ms"}, "--busy-poll 2ms: want 0 (never) up to 1ms"},
		{[]string{"--poll-nap", "-1us"}, "--poll-nap -1µs: want 0 (never) up to 1ms"},
		{[]string{"--poll-nap", "2ms"}, "--poll-nap 2ms: want 0 (never) up to 1ms"},
		{[]string{"--write-timeout", "0"}, "--write-timeout 0s: want more than 0"},
		{[]string{"--client-query-buffer-limit", "1"}, "--client-query-buffer-limit 1: want at least 1mb"},
		{[]string{"--client-query-buffer-limit", "0"}, "--client-query-buffer-limit 0: want at least 1mb"},
		{[]string{"--proto-max-bulk-len", "1000"}, "--proto-max-bulk-len 1000: want at least 1mb"},
		{[]string{"--proto-max-bulk-len", "2gb"}, "--proto-max-bulk-len 2147483648 is above --client-query-buffer-limit 1073741824"},
		{[]string{"--client-query-buffer-limit", "256mb"}, "--proto-max-bulk-len 536870912 is above --client-query-buffer-limit 268435456"},
		{[]string{"--maxmemory", "-1"}, `invalid argument "-1" for "--maxmemory" flag: not a size`},
		{[]string{"--maxmemory", "lots"}, `invalid argument "lots" for "--maxmemory" flag`},
		{[]string{"--maxmemory-per-filter", "1.5gb"}, `invalid argument "1.5gb" for "--maxmemory-per-filter" flag`},
		{[]string{"--proto-max-bulk-len", "-1mb"}, `invalid argument "-1mb" for "--proto-max-bulk-len" flag`},
		{[]string{"--maxmemory", "99999999999tb"}, `invalid argument "99999999999tb" for "--maxmemory" flag`},
		{[]string{"--appendfsync", "sometimes"}, `--appendfsync "sometimes": want always, everysec or no`},
		{[]string{"--dir", ""}, "--dir is empty"},
		{[]string{"--addr", "6380"}, `--addr "6380": want host:port`},
		{[]string{"--metrics-addr", "localhost"}, `--metrics-addr "localhost": want host:port`},
		{[]string{"--pprof"}, "--pprof needs --metrics-addr"},
		{[]string{"--filter-layout", "classic"}, `--filter-layout "classic": want bloomery or redisbloom`},
		{[]string{"--filter-layout", "redisbloom", "--backend", "redis://127.0.0.1:1"}, "--filter-layout redisbloom needs --backend memory"},
	} {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--dir", "-"}, c.args...)
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("serve %s: exit %d, stderr %q; want %d and %q", strings.Join(c.args, " "), code, stderr, exitUsage, c.want)
		}
	}
}

// TestOffIfZero: --busy-poll 0 and --poll-nap 0 mean never (a negative
// Config value: the Config's zero would be its default); other values
// pass.
func TestOffIfZero(t *testing.T) {
	for _, c := range []struct{ flag, want time.Duration }{
		{0, -1}, {time.Microsecond, time.Microsecond}, {server.DefaultBusyPoll, server.DefaultBusyPoll}, {server.MaxBusyPoll, server.MaxBusyPoll},
	} {
		if got := offIfZero(c.flag); got != c.want {
			t.Errorf("offIfZero(%v) = %v, want %v", c.flag, got, c.want)
		}
	}
}

// TestMirrorBytes: --redis-mirror 0 means no copies (a negative Config
// value), sizes pass, and no size wraps negative.
func TestMirrorBytes(t *testing.T) {
	for _, c := range []struct {
		flag bytesValue
		want int64
	}{{0, -1}, {1, 1}, {256 << 20, 256 << 20}, {math.MaxUint64, math.MaxInt64}} {
		if got := mirrorBytes(c.flag); got != c.want {
			t.Errorf("mirrorBytes(%d) = %d, want %d", c.flag, got, c.want)
		}
	}
}

func TestLimitValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		str  string
	}{
		{"auto", 0, "auto"},
		{"0", server.Unlimited, "unlimited"},
		{"0mb", server.Unlimited, "unlimited"},
		{"unlimited", server.Unlimited, "unlimited"},
		{"UNLIMITED", server.Unlimited, "unlimited"},
		{"128mb", 128 << 20, "128mb"},
		{"2gb", 2 << 30, "2gb"},
		{"1g", 1e9, "1000000000"},
		{"1536mb", 1536 << 20, "1536mb"},
		{"100", 100, "100"},
	} {
		var v limitValue
		if err := v.Set(c.in); err != nil || uint64(v) != c.want || v.String() != c.str {
			t.Errorf("Set(%q): %d %q %v; want %d %q", c.in, uint64(v), v.String(), err, c.want, c.str)
		}
	}
	for _, bad := range []string{"", "-1", "1.5gb", "lots", "2 gb x"} {
		var v limitValue
		if err := v.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted: %d", bad, uint64(v))
		}
	}
}
