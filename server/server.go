package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom/internal/resp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config configures a Server. Zero fields take the defaults noted.
type Config struct {
	// Addr is the TCP address to listen on. Default: 127.0.0.1:6380
	// (loopback only: set it explicitly to listen on other interfaces).
	Addr string
	// Backend is "memory" (default: filters in this process, durable in
	// Dir) or a Redis URL (redis://, rediss://, or redis+cluster://host:port,…)
	// whose Redis keeps the filters (redisfilter); the server is then
	// stateless.
	Backend string
	// Dir is the data directory of the memory backend. Default:
	// ./bloomery-data. "-" keeps nothing on disk.
	Dir string
	// AppendFsync is when the append-only log is fsynced: "always" (before
	// a reply is sent), "everysec" (default) or "no" (left to the OS).
	AppendFsync string
	// AOFRewriteMinSize and AOFRewritePercent trigger a background
	// snapshot when the log is larger than both the minimum (default 64
	// MiB) and the percentage (default 100) of its size after the last
	// snapshot.
	AOFRewriteMinSize int64
	AOFRewritePercent int
	// RequirePass, when set, makes every command but AUTH, HELLO and QUIT
	// answer NOAUTH until the client authenticates.
	RequirePass string
	// MaxMemory bounds the bytes of all filters together (0: no limit);
	// MaxFilterBytes bounds one filter (default bloom.DefaultMaxBytes).
	// BF.RESERVE, growth or LOADCHUNK beyond either answers "ERR
	// Insufficient memory to create filter".
	MaxMemory      uint64
	MaxFilterBytes uint64
	// MaxClients bounds open connections (default 10000).
	MaxClients int
	// IdleTimeout closes a client idle that long (0: never).
	IdleTimeout time.Duration
	// Limits bound what one command may declare (resp.Limits defaults:
	// Redis's).
	Limits resp.Limits
	// MetricsAddr, when set, serves Prometheus metrics at /metrics and
	// Go's profiles at /debug/pprof/ (keep it on a private address).
	MetricsAddr string
	// ManageGoMemory lets the server set the Go runtime's soft memory
	// limit from its filters' bytes (see setMemoryLimit): for a process
	// that is only this server, as bloomery serve. It is process-wide, so
	// leave it off when the server is embedded in another program.
	ManageGoMemory bool
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:6380"
	}
	if cfg.Backend == "" {
		cfg.Backend = "memory"
	}
	if cfg.Dir == "" {
		cfg.Dir = "./bloomery-data"
	}
	if cfg.AppendFsync == "" {
		cfg.AppendFsync = "everysec"
	}
	switch cfg.AppendFsync {
	case "always", "everysec", "no":
	default:
		return cfg, fmt.Errorf("server: appendfsync %q: want always, everysec or no", cfg.AppendFsync)
	}
	if cfg.AOFRewriteMinSize <= 0 {
		cfg.AOFRewriteMinSize = 64 << 20
	}
	if cfg.AOFRewritePercent <= 0 {
		cfg.AOFRewritePercent = 100
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Backend != "memory" && !isRedisURL(cfg.Backend) {
		return cfg, fmt.Errorf("server: backend %q: want memory or a redis:// URL", cfg.Backend)
	}
	return cfg, nil
}

func isRedisURL(s string) bool {
	for _, p := range []string{"redis://", "rediss://", "redis+cluster://", "rediss+cluster://", "unix://"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Server is a bloomery server. New loads its data; Serve answers clients;
// Shutdown stops it, saving what it holds.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   backend
	persist persister // the memory backend's durability; nil without one
	cmds    table
	metrics *metrics
	stats   stats
	started time.Time

	ctx    context.Context // canceled by Shutdown
	cancel context.CancelFunc

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*conn]struct{}
	nextID   int64
	connWG   sync.WaitGroup
	closing  atomic.Bool
	done     chan struct{}
	shutOnce sync.Once
	shutErr  error
	httpSrv  *http.Server
}

// New makes a server: it opens the backend (for the memory backend,
// loading the snapshot and replaying the log in Dir) but does not listen
// yet.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, started: time.Now(), conns: map[*conn]struct{}{}, done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.Backend == "memory" {
		m := newMemstore(cfg.MaxFilterBytes, cfg.MaxMemory)
		if cfg.Dir != "-" {
			p, err := openPersistence(m, cfg, s.log)
			if err != nil {
				return nil, err
			}
			m.persist, m.journal, s.persist = p, p, p
		}
		s.store = m
		go s.sweep(m)
	} else {
		s.store, err = newRedisStore(s.ctx, cfg)
		if err != nil {
			return nil, err
		}
	}
	s.metrics = newMetrics(s)
	s.cmds = newTable(s.metrics)
	return s, nil
}

// sweep deletes expired keys ten times a second until shutdown.
func (s *Server) sweep(m *memstore) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	limit := int64(-1)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			m.ks.sweep()
			s.stats.expired.Store(m.ks.expired.Load())
			if s.cfg.ManageGoMemory {
				limit = setMemoryLimit(m.used.Load(), limit)
			}
		}
	}
}

// setMemoryLimit sets Go's soft memory limit to the filters' bytes plus
// 10% and 16 MiB (buffers, connections, the log's unsynced copy), so that the garbage of commands is collected long
// before the heap doubles (with GOGC=100 alone, a heap of 1 GiB of
// filters could grow to 2 GiB). Filters are large pointer-free arrays,
// which a collection neither scans nor moves, so frequent collections
// are cheap. It returns the limit set (unchanged within 1%).
func setMemoryLimit(filterBytes uint64, current int64) int64 {
	want := int64(filterBytes)/100*110 + 16<<20
	if current > 0 && want > current*99/100 && want < current*101/100 {
		return current
	}
	debug.SetMemoryLimit(want)
	return want
}

// ListenAndServe listens on cfg.Addr (and cfg.MetricsAddr) and serves
// until Shutdown.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen: %w", err)
	}
	return s.Serve(ln)
}

// Serve answers clients on ln until Shutdown; it returns nil after a
// Shutdown, else the accept error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	if s.closing.Load() {
		ln.Close()
		return nil
	}
	if s.cfg.MetricsAddr != "" {
		if err := s.serveMetrics(); err != nil {
			ln.Close()
			return err
		}
	}
	s.log.Info("bloomery serving", "addr", ln.Addr().String(), "backend", s.backendName(),
		"dir", s.cfg.Dir, "appendfsync", s.cfg.AppendFsync, "auth", s.cfg.RequirePass != "")
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				<-s.done
				return s.shutErr
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		s.accept(nc)
	}
}

// accept starts serving one connection, or refuses it past MaxClients.
func (s *Server) accept(nc net.Conn) {
	s.stats.connections.Add(1)
	s.mu.Lock()
	if len(s.conns) >= s.cfg.MaxClients || s.closing.Load() {
		s.mu.Unlock()
		s.stats.rejected.Add(1)
		nc.Write([]byte("-ERR max number of clients reached\r\n"))
		nc.Close()
		return
	}
	s.nextID++
	c := s.newConn(nc, s.nextID)
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	s.mu.Unlock()
	s.stats.clients.Add(1)
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			s.stats.clients.Add(-1)
			s.connWG.Done()
		}()
		c.serve()
	}()
}

// serveMetrics starts the Prometheus endpoint.
func (s *Server) serveMetrics() error {
	ln, err := net.Listen("tcp", s.cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("server: metrics listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s.mu.Lock()
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Unlock()
	go s.httpSrv.Serve(ln)
	s.log.Info("metrics serving", "addr", ln.Addr().String(), "path", "/metrics")
	return nil
}

// Addr is the address the server listens on (cfg.Addr before Serve).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.cfg.Addr
}

// Done is closed when the server has shut down.
func (s *Server) Done() <-chan struct{} { return s.done }

// Shutdown stops the server gracefully: it stops accepting, lets each
// client finish the command it is running, closes the connections, and
// closes the backend (for the memory backend: the log flushed and
// fsynced, and a final snapshot). It waits for the clients until ctx is
// done. Later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutOnce.Do(func() {
		s.closing.Store(true)
		s.log.Info("shutting down")
		s.mu.Lock()
		if s.ln != nil {
			s.ln.Close()
		}
		for c := range s.conns {
			// End each client's input: a command being run finishes
			// and its reply is sent; then the read fails and the
			// connection closes.
			if tc, ok := c.nc.(*net.TCPConn); ok {
				tc.CloseRead()
			} else {
				c.nc.SetReadDeadline(time.Now())
			}
		}
		hs := s.httpSrv
		s.mu.Unlock()
		waited := make(chan struct{})
		go func() { s.connWG.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-ctx.Done():
			s.log.Warn("shutdown: clients still running; closing the backend anyway")
		}
		s.cancel()
		if hs != nil {
			hs.Close()
		}
		if err := s.store.Close(); err != nil {
			s.shutErr = fmt.Errorf("server: close backend: %w", err)
			s.log.Error("shutdown: closing the backend failed", "err", err)
		} else {
			s.log.Info("shutdown complete")
		}
		close(s.done)
	})
	<-s.done
	return s.shutErr
}

func (s *Server) backendName() string {
	if s.cfg.Backend == "memory" {
		return "memory"
	}
	return "redis"
}

func splitHostPort(addr string) (string, string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, ""
	}
	return h, p
}
