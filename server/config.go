package server

import (
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/bloomery/bloom/internal/resp"
)

// Config configures a Server. Zero fields take the defaults noted; a
// value that makes no sense (a negative count or duration, a buffer
// limit below Redis's minimum) makes New fail with an error naming the
// field. docs/SERVER.md lists every limit, its default, and what happens
// when it is reached.
type Config struct {
	// Addr is the TCP address to listen on. Default: 127.0.0.1:6380
	// (loopback only: set it explicitly to listen on other interfaces).
	Addr string
	// Backend is "memory" (default: filters in this process, durable in
	// Dir) or a Redis URL (redis://, rediss://, or redis+cluster://host:port,…)
	// whose Redis keeps the filters (redisfilter); the server is then
	// stateless.
	Backend string
	// FilterLayout is the layout of new filters (docs/SERVER.md, "Filter
	// layouts"): "bloomery" (default: Bloomery's own, fast, with a
	// measured false-positive rate at or below the one asked for) or
	// "redisbloom" (RedisBloom's own: its sizes and BF.INFO figures, its
	// false positives, dumps that RedisBloom loads). A filter keeps its
	// layout for life; one loaded from a RedisBloom dump header is in
	// RedisBloom's whatever this says. The Redis backend has Bloomery's
	// only.
	FilterLayout string
	// Dir is the data directory of the memory backend. Default:
	// ./bloomery-data. "-" keeps nothing on disk.
	Dir string
	// AppendFsync is when the append-only log is fsynced: "always" (before
	// a reply is sent), "everysec" (default) or "no" (left to the OS).
	AppendFsync string
	// AOFRewriteMinSize and AOFRewritePercent trigger a background
	// snapshot when the data on disk (the last snapshot and the log after
	// it) is larger than the minimum (default 64 MiB) and has grown by the
	// percentage (default 100) since that snapshot, as Redis's
	// auto-aof-rewrite-min-size and auto-aof-rewrite-percentage.
	AOFRewriteMinSize int64
	AOFRewritePercent int
	// RequirePass, when set, makes every command but AUTH, HELLO and QUIT
	// answer NOAUTH until the client authenticates.
	RequirePass string
	// MaxMemory bounds the bytes of all filters' bit arrays together, as
	// reserved (allocated), not as touched; MaxFilterBytes bounds one
	// filter. BF.RESERVE, growth or LOADCHUNK beyond either answers "ERR
	// Insufficient memory to create filter" and changes nothing.
	// MaxMemory defaults to DefaultMaxMemoryPercent of the machine's
	// physical memory or of the control group's limit, whichever is
	// smaller (unlimited when neither can be read); it applies to the
	// memory backend only. MaxFilterBytes defaults to
	// DefaultMaxFilterBytes. Unlimited removes either limit.
	MaxMemory      uint64
	MaxFilterBytes uint64
	// MaxClients bounds open connections (default 10000); more are
	// refused with "ERR max number of clients reached".
	MaxClients int
	// IdleTimeout closes a client that sent nothing for that long, counted
	// from the last byte received (0: never).
	IdleTimeout time.Duration
	// WriteTimeout closes a client whose replies could not be sent for
	// that long (it does not read them). Default: DefaultWriteTimeout.
	WriteTimeout time.Duration
	// EventLoops is the number of event loops serving the connections of
	// the memory backend on Linux (docs/DESIGN.md §8, step 1). Default:
	// GOMAXPROCS − 1, at least 1.
	EventLoops int
	// BusyPoll is how long an event loop that has been at least half
	// busy polls for input before it sleeps in epoll_wait
	// (loop_poll_linux.go, docs/DESIGN.md §8 "Busy polling"): the CPU it
	// costs buys the wake-ups of the loop and of its clients. Only loops
	// that block in epoll_wait poll (Linux, the first Server of a
	// process, GOMAXPROCS at least 2); connections
	// served by goroutines never do. Default: DefaultBusyPoll; negative:
	// never; at most MaxBusyPoll.
	BusyPoll time.Duration
	// PollNap is how long a polling event loop whose clients keep it fed
	// sleeps once, instead of polling, before it looks for input again
	// (loop_poll_linux.go, docs/DESIGN.md §8 "Busy polling"): the gap's
	// CPU time saved for up to the nap's latency. Loops whose clients all
	// wait on it after a nap spin instead, for a while. Default:
	// DefaultPollNap; negative: never (spin); at most MaxBusyPoll.
	PollNap time.Duration
	// RedisMirrorBytes bounds the memory the Redis backend may hold in
	// copies of its filters' bits: a filter written in batches gets one
	// while it fits, and its adds then need no reads from Redis, one
	// round trip a batch (redisfilter.WithMirrors, docs/DESIGN.md §8).
	// Default: DefaultRedisMirrorBytes; negative: no copies.
	RedisMirrorBytes int64
	// GoroutinePerConn serves each connection with a goroutine of its
	// own instead of event loops: the only way on other systems. On the
	// Redis backend the loops hand a connection's pipelined adds or tests
	// to the filter's lane without waiting for Redis (docs/DESIGN.md §8):
	// pipelining clients gain (BF.ADD at -P 16: 1.00-1.22x), clients that
	// wait for each reply lose 6-10% against goroutines
	// (docs/BENCHMARKS.md, "The stateless mode on the event loops").
	GoroutinePerConn bool
	// Limits bound what one command may declare (resp.Limits; zero fields
	// take Redis's defaults). MaxBulk and MaxQueryBuffer may not be below
	// MinBufferLimit (Redis's minimum), and MaxBulk may not pass
	// MaxQueryBuffer.
	Limits resp.Limits
	// MetricsAddr, when set, serves Prometheus metrics at /metrics over
	// plain HTTP, without authentication, on that address (":9121" is
	// every interface: keep it private).
	MetricsAddr string
	// Pprof also serves Go's profiles at /debug/pprof/ on MetricsAddr.
	// Default: off (a profile reveals the process's internals and costs
	// CPU).
	Pprof bool
	// ManageGoRuntime lets the server set the Go runtime's soft memory
	// limit from its filters' bytes (see setMemoryLimit), with the
	// Redis backend turn GOGC's trigger off under that limit
	// (redisstore_gc.go), and, when it serves connections with
	// goroutines, hold a processor with one more in GOMAXPROCS
	// (keeper_linux.go): for a process that is only this server, as
	// bloomery serve. It is process-wide, so leave it off when the
	// server is embedded in another program.
	ManageGoRuntime bool
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger

	// logFlushEvery is the log flusher's period (0: a second); tests
	// lengthen it to see the flushes something else asks for.
	logFlushEvery time.Duration
}

// The values of Config.FilterLayout.
const (
	LayoutBloomery   = "bloomery"
	LayoutRedisBloom = "redisbloom"
)

// Unlimited, as Config.MaxMemory or Config.MaxFilterBytes, removes that
// limit (INFO and CONFIG GET then show 0, as Redis does for none).
const Unlimited uint64 = math.MaxUint64

// Defaults and minimums of Config (docs/SERVER.md says why).
const (
	// DefaultMaxFilterBytes is the default limit of one filter, as
	// valkey-bloom's per-object limit: about 10⁸ items at 1% error,
	// and small enough that no single command makes an outage.
	DefaultMaxFilterBytes = 128 << 20
	// DefaultMaxClients is the default limit of open connections.
	DefaultMaxClients = 10000
	// DefaultWriteTimeout is how long a reply may wait for a client to
	// read it.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultBusyPoll is the default of Config.BusyPoll.
	DefaultBusyPoll = 20 * time.Microsecond
	// DefaultRedisMirrorBytes is the default of Config.RedisMirrorBytes.
	DefaultRedisMirrorBytes = 256 << 20
	// DefaultPollNap is the default of Config.PollNap.
	DefaultPollNap = 50 * time.Microsecond
	// MaxBusyPoll is the largest Config.BusyPoll and Config.PollNap
	// accepted.
	MaxBusyPoll = time.Millisecond
	// MinBufferLimit is the smallest MaxBulk and MaxQueryBuffer accepted:
	// Redis's minimum of proto-max-bulk-len and client-query-buffer-limit.
	MinBufferLimit = 1 << 20
)

// withDefaults checks cfg and fills its zero fields, except MaxMemory
// (see resolveMaxMemory).
func (cfg Config) withDefaults() (Config, error) {
	if err := cfg.check(); err != nil {
		return cfg, err
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:6380"
	}
	if cfg.Backend == "" {
		cfg.Backend = "memory"
	}
	if cfg.Dir == "" {
		cfg.Dir = "./bloomery-data"
	}
	if cfg.FilterLayout == "" {
		cfg.FilterLayout = LayoutBloomery
	}
	if cfg.AppendFsync == "" {
		cfg.AppendFsync = "everysec"
	}
	if cfg.AOFRewriteMinSize == 0 {
		cfg.AOFRewriteMinSize = 64 << 20
	}
	if cfg.AOFRewritePercent == 0 {
		cfg.AOFRewritePercent = 100
	}
	if cfg.MaxFilterBytes == 0 {
		cfg.MaxFilterBytes = DefaultMaxFilterBytes
	}
	if cfg.MaxClients == 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.BusyPoll == 0 {
		cfg.BusyPoll = DefaultBusyPoll
	}
	if cfg.PollNap == 0 {
		cfg.PollNap = DefaultPollNap
	}
	if cfg.RedisMirrorBytes == 0 {
		cfg.RedisMirrorBytes = DefaultRedisMirrorBytes
	}
	cfg.Limits = limitsWithDefaults(cfg.Limits)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

// limitsWithDefaults fills l's zero fields with resp's defaults, so that
// INFO and CONFIG GET show the limits in force.
func limitsWithDefaults(l resp.Limits) resp.Limits {
	if l.MaxBulk == 0 {
		l.MaxBulk = resp.DefaultMaxBulk
	}
	if l.MaxArgs == 0 {
		l.MaxArgs = resp.DefaultMaxArgs
	}
	if l.MaxInline == 0 {
		l.MaxInline = resp.DefaultMaxInline
	}
	if l.MaxQueryBuffer == 0 {
		l.MaxQueryBuffer = resp.DefaultMaxQueryBuffer
	}
	return l
}

// check refuses the values of cfg that make no sense.
func (cfg Config) check() error {
	switch cfg.AppendFsync {
	case "", "always", "everysec", "no":
	default:
		return fmt.Errorf("server: AppendFsync %q: want always, everysec or no", cfg.AppendFsync)
	}
	if cfg.Backend != "" && cfg.Backend != "memory" && !isRedisURL(cfg.Backend) {
		return fmt.Errorf("server: backend %q: want memory or a redis:// URL", cfg.Backend)
	}
	switch cfg.FilterLayout {
	case "", LayoutBloomery:
	case LayoutRedisBloom:
		if cfg.Backend != "" && cfg.Backend != "memory" {
			return fmt.Errorf("server: FilterLayout %q needs the memory backend (the Redis backend keeps Bloomery's layout only)", cfg.FilterLayout)
		}
	default:
		return fmt.Errorf("server: FilterLayout %q: want %s or %s", cfg.FilterLayout, LayoutBloomery, LayoutRedisBloom)
	}
	if cfg.BusyPoll > MaxBusyPoll {
		return fmt.Errorf("server: BusyPoll %v is above the maximum, %v", cfg.BusyPoll, MaxBusyPoll)
	}
	if cfg.PollNap > MaxBusyPoll {
		return fmt.Errorf("server: PollNap %v is above the maximum, %v", cfg.PollNap, MaxBusyPoll)
	}
	if cfg.Pprof && cfg.MetricsAddr == "" {
		return fmt.Errorf("server: Pprof needs MetricsAddr (the profiles are served there)")
	}
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"AOFRewriteMinSize", cfg.AOFRewriteMinSize}, {"AOFRewritePercent", int64(cfg.AOFRewritePercent)},
		{"MaxClients", int64(cfg.MaxClients)}, {"EventLoops", int64(cfg.EventLoops)}, {"IdleTimeout", int64(cfg.IdleTimeout)},
		{"WriteTimeout", int64(cfg.WriteTimeout)}, {"Limits.MaxArgs", int64(cfg.Limits.MaxArgs)},
		{"Limits.MaxInline", int64(cfg.Limits.MaxInline)},
	} {
		if c.v < 0 {
			return fmt.Errorf("server: %s is negative (%d)", c.name, c.v)
		}
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"Limits.MaxBulk", cfg.Limits.MaxBulk}, {"Limits.MaxQueryBuffer", cfg.Limits.MaxQueryBuffer}} {
		if c.v != 0 && c.v < MinBufferLimit {
			return fmt.Errorf("server: %s %d is below the minimum, %d (1 MiB, as Redis)", c.name, c.v, MinBufferLimit)
		}
	}
	if l := limitsWithDefaults(cfg.Limits); l.MaxBulk > l.MaxQueryBuffer {
		return fmt.Errorf("server: Limits.MaxBulk %d is above Limits.MaxQueryBuffer %d: such an argument could never be received", l.MaxBulk, l.MaxQueryBuffer)
	}
	return nil
}

func isRedisURL(s string) bool {
	for _, p := range []string{"redis://", "rediss://", "redis+cluster://", "rediss+cluster://", "unix://"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// resolveMaxMemory returns the memory limit in force for cfg (filled by
// withDefaults) on a machine of mm, and how it was chosen.
func resolveMaxMemory(cfg Config, mm machineMemory) (uint64, string) {
	switch {
	case cfg.Backend != "memory":
		return Unlimited, "not applied: the Redis backend's memory is bounded by Redis's own maxmemory"
	case cfg.MaxMemory == Unlimited:
		return Unlimited, "unlimited (configured)"
	case cfg.MaxMemory != 0:
		return cfg.MaxMemory, "configured"
	}
	return defaultMaxMemory(mm)
}

// shown is a limit as INFO and CONFIG GET show it: 0 for none.
func shown(limit uint64) uint64 {
	if limit == Unlimited {
		return 0
	}
	return limit
}
