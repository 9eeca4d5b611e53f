package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bloomery/bloom/internal/resp"
	"github.com/bloomery/bloom/server"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newServeCmd is "bloomery serve": the RedisBloom-compatible server.
func newServeCmd() *cobra.Command {
	var (
		cfg                       server.Config
		maxMemory                 limitValue
		maxFilter                 = limitValue(server.DefaultMaxFilterBytes)
		maxBulk                   = bytesValue(resp.DefaultMaxBulk)
		maxQuery                  = bytesValue(resp.DefaultMaxQueryBuffer)
		configFile, level, format string
		busyPoll                  time.Duration
		pollNap                   time.Duration
		redisMirror               = bytesValue(server.DefaultRedisMirrorBytes)
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the RedisBloom-compatible server (BF.* over the Redis protocol)",
		Long: `serve runs a server that speaks the Redis protocol (RESP2 and RESP3) and
RedisBloom's BF.* commands, so redis-cli and any Redis client library can
use it. By default the filters live in this process and are durable in
--dir (an append-only log plus snapshots); with --backend redis://… they
live in a Redis or Redis Cluster that needs no modules, and the server
keeps nothing itself.

A config file (--config) holds lines "name value" with the flags' names
(addr 127.0.0.1:6380); flags on the command line win over it. SIGTERM or
SIGINT shut the server down gracefully: the log is flushed and a final
snapshot written.`,
		Example: `  # Serve on 127.0.0.1:6380, data in ./bloomery-data:
  bloomery serve

  # Fsync every write before replying, require a password, cap memory:
  bloomery serve --appendfsync always --requirepass s3cret --maxmemory 2gb

  # Stateless, in front of a Redis Cluster:
  bloomery serve --backend redis+cluster://10.0.0.1:7000,10.0.0.2:7000`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile != "" {
				if err := applyConfigFile(cmd.Flags(), configFile); err != nil {
					return usageErrorf("%v", err)
				}
			}
			log, err := newLogger(cmd.ErrOrStderr(), level, format)
			if err != nil {
				return usageErrorf("%v", err)
			}
			cfg.MaxMemory, cfg.MaxFilterBytes = uint64(maxMemory), uint64(maxFilter)
			cfg.BusyPoll, cfg.PollNap = busyPoll, pollNap
			cfg.Limits = resp.Limits{MaxBulk: int64(maxBulk), MaxQueryBuffer: int64(maxQuery)}
			if err := checkServeFlags(cfg); err != nil {
				return usageErrorf("%v", err)
			}
			cfg.BusyPoll, cfg.PollNap = offIfZero(cfg.BusyPoll), offIfZero(cfg.PollNap)
			cfg.RedisMirrorBytes = mirrorBytes(redisMirror)
			cfg.Logger = log
			cfg.ManageGoRuntime = true
			return runServer(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", "127.0.0.1:6380", "TCP address to listen on (loopback by default)")
	f.StringVar(&cfg.Dir, "dir", "./bloomery-data", `data directory of the memory backend ("-": keep nothing on disk)`)
	f.StringVar(&cfg.AppendFsync, "appendfsync", "everysec", "fsync the log: always (before each reply), everysec or no")
	f.StringVar(&cfg.RequirePass, "requirepass", "", "password clients must AUTH with")
	f.Var(&maxMemory, "maxmemory", fmt.Sprintf("memory limit for all filters' bit arrays together, e.g. 2gb; "+
		"auto: %d%% of the physical memory or of the cgroup limit, whichever is smaller; 0 or unlimited: none",
		server.DefaultMaxMemoryPercent))
	f.Var(&maxFilter, "maxmemory-per-filter", "memory limit for one filter's bit arrays (128mb holds about 90 million items at 1%); 0 or unlimited: none")
	f.IntVar(&cfg.MaxClients, "maxclients", server.DefaultMaxClients, "maximum open client connections (at least 1)")
	f.DurationVar(&cfg.IdleTimeout, "timeout", 0, "close clients that sent nothing for this long, e.g. 5m (0: never)")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", server.DefaultWriteTimeout, "close clients that do not read their replies for this long")
	f.IntVar(&cfg.EventLoops, "event-loops", 0, "event loops serving connections on Linux (0: one fewer than the CPUs the Go runtime uses, at least 1)")
	f.DurationVar(&busyPoll, "busy-poll", server.DefaultBusyPoll, "how long a busy event loop polls for input before it sleeps, e.g. 50us (0: never; at most 1ms)")
	f.DurationVar(&pollNap, "poll-nap", server.DefaultPollNap, "how long a busy event loop whose many clients keep it fed naps instead of polling, e.g. 25us (0: never, it polls; at most 1ms)")
	f.BoolVar(&cfg.GoroutinePerConn, "goroutine-per-conn", false, "serve each connection with a goroutine of its own instead of event loops")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics, without authentication (:PORT is every interface)")
	f.BoolVar(&cfg.Pprof, "pprof", false, "also serve Go's profiles at http://ADDR/debug/pprof/ on --metrics-addr")
	f.StringVar(&cfg.Backend, "backend", "memory", "memory, or a Redis URL: redis://host:port/0, rediss://…, redis+cluster://h1:p1,h2:p2")
	f.Var(&redisMirror, "redis-mirror", "memory the Redis backend may hold in copies of its filters' bits, so that batched adds need no reads from Redis (0: none)")
	f.StringVar(&cfg.FilterLayout, "filter-layout", server.LayoutBloomery, "layout of new filters: bloomery (fast, measured false-positive rate at most the one asked for) "+
		"or redisbloom (RedisBloom's own: its sizes, its false positives, dumps RedisBloom loads)")
	f.Var(&maxBulk, "proto-max-bulk-len", "longest argument accepted (at least 1mb)")
	f.Var(&maxQuery, "client-query-buffer-limit", "largest command accepted (at least 1mb)")
	f.StringVar(&configFile, "config", "", "config file of \"name value\" lines (flag names)")
	f.StringVar(&level, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&format, "log-format", "text", "text or json")
	return cmd
}

// runServer serves until SIGINT/SIGTERM or a SHUTDOWN command.
func runServer(ctx context.Context, cfg server.Config) error {
	if ctx == nil {
		ctx = context.Background()
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		select {
		case s := <-sig:
			cfg.Logger.Info("signal received", "signal", s.String())
		case <-ctx.Done():
		case <-srv.Done():
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	return srv.ListenAndServe()
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// applyConfigFile sets the flags named in path that the command line did
// not set. Blank lines and lines starting with # are skipped.
func applyConfigFile(fs *pflag.FlagSet, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, _ := strings.Cut(line, " ")
		value = strings.Trim(strings.TrimSpace(value), `"`)
		fl := fs.Lookup(name)
		if fl == nil || name == "config" {
			return fmt.Errorf("%s:%d: unknown setting %q", path, n, name)
		}
		if fl.Changed {
			continue
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", path, n, name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	return nil
}
