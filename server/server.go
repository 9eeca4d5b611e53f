package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is a bloomery server. New loads its data; Serve answers clients;
// Shutdown stops it, saving what it holds.
type Server struct {
	cfg Config
	log *slog.Logger
	// The backend (backend.go): the whole, and one store per concern;
	// with the memory backend, all three are the one memstore.
	backend backend
	keys    keyStore
	bloom   bloomStore
	cuckoo  cuckooStore  // nil: the backend has no cuckoo filters (CF.* answer errNotSupported)
	persist *persistence // the memory backend's durability; nil without one
	cmds    table
	metrics *metrics
	stats   stats
	started time.Time
	machine machineMemory // what the machine (or cgroup) offers
	memFrom string        // how cfg.MaxMemory was chosen, for INFO
	// maxMemorySet: a MaxMemory was given (it does not apply to the
	// Redis backend).
	maxMemorySet bool
	authLog      rateLog // failed AUTH lines
	track        tracker // client-side caching (tracking.go)

	// writeCutoff is when writes to clients end once Shutdown began
	// (Unix nanoseconds; 0 before).
	writeCutoff atomic.Int64

	ctx    context.Context // canceled by Shutdown
	cancel context.CancelFunc

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*conn]struct{}
	nextID   int64
	loopsN   int          // event loops to serve connections with (0: goroutines)
	remote   bool         // the Redis backend: commands wait on the network
	loops    []*eventLoop // started by Serve
	nextLoop int
	connWG   sync.WaitGroup
	closing  atomic.Bool
	done     chan struct{}
	shutOnce sync.Once
	shutErr  error
	httpSrv  *http.Server
	unhold   func() // gives back the processor keeper (keeper_linux.go); nil: none held
}

// New makes a server: it opens the backend (for the memory backend,
// loading the snapshot and replaying the log in Dir) but does not listen
// yet.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, started: time.Now(), conns: map[*conn]struct{}{}, done: make(chan struct{}),
		machine: systemMemory.read(), authLog: rateLog{every: time.Second}}
	s.maxMemorySet = cfg.MaxMemory != 0 && cfg.MaxMemory != Unlimited
	s.cfg.MaxMemory, s.memFrom = resolveMaxMemory(cfg, s.machine)
	cfg = s.cfg
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.loopsN = eventLoops(cfg)
	s.metrics = newMetrics(s, 1+s.loopsN)
	s.cmds = newTable(s.metrics)
	if cfg.Backend != "memory" {
		r, err := newRedisStore(s.ctx, cfg)
		if err != nil {
			return nil, err
		}
		s.backend, s.keys, s.bloom, s.cuckoo = r, r, r, redisCuckoo{r}
		s.remote = true
		if cfg.ManageGoRuntime {
			go s.manageRedisMemory()
		}
		return s, nil
	}
	m, err := s.openMemory(cfg)
	if err != nil {
		return nil, err
	}
	journal := m.ks.expiring // keys deleted on expiry also invalidate caches (tracking.go)
	m.ks.expiring = func(key string) { journal(key); s.track.invalidate(nil, []string{key}) }
	s.backend, s.keys, s.bloom, s.cuckoo = m, m, m, memCuckoo{m}
	go s.sweep(m)
	return s, nil
}

// holdProcessor starts the processor keeper (keeper_linux.go) for a
// server that serves its connections with goroutines, when it may manage
// the runtime and is not shutting down; Shutdown gives it back. The
// caller holds s.mu.
func (s *Server) holdProcessor() {
	if !s.cfg.ManageGoRuntime || s.loopsN > 0 || s.unhold != nil || s.closing.Load() {
		return
	}
	release, err := holdProcessor()
	if err != nil {
		s.log.Warn("no processor keeper", "err", err)
		return
	}
	s.unhold = release
}

// openMemory makes the memory backend and, with a data directory, loads
// it (loadMemory).
func (s *Server) openMemory(cfg Config) (*memstore, error) {
	if cfg.Dir == "-" {
		m := newMemstore(cfg.MaxFilterBytes, cfg.MaxMemory)
		m.layout = filterLayout(cfg)
		return m, nil
	}
	m, p, err := loadMemory(cfg, s.cmds, s.log, time.Now)
	if err != nil {
		return nil, limitsHint(err, cfg)
	}
	s.persist = p
	return m, nil
}

// loadMemory loads cfg.Dir (docs/DESIGN.md §8) into a loading store
// (the keyspace's clock stopped, so that nothing expires while the past
// is replayed; the per-filter limit in force, not the total), its log
// records run through cmds, then serves it: its clock (now) and the
// total limit start, and its changes go to the log.
func loadMemory(cfg Config, cmds table, log *slog.Logger, now func() time.Time) (*memstore, *persistence, error) {
	m := newLoadingMemstore(cfg.MaxFilterBytes)
	p, err := openPersistence(m.ks, newReplayer(m, cmds), cfg, log)
	if err != nil {
		return nil, nil, err
	}
	m.serve(cfg.MaxMemory, filterLayout(cfg), now)
	m.journal = p
	p.start()
	return m, p, nil
}

// eventLoops is the number of event loops cfg asks for: none (serve each
// connection with a goroutine) without epoll or with GoroutinePerConn.
// On the Redis backend, whose commands wait on the network, the loops
// hand runs of adds and tests to the lanes without waiting
// (endRunAsync) and every other command that reads or writes keys to a
// goroutine (conn.slowCall).
func eventLoops(cfg Config) int {
	switch {
	case !haveEventLoop || cfg.GoroutinePerConn:
		return 0
	case cfg.EventLoops > 0:
		return cfg.EventLoops
	}
	// One processor left for the rest (the loops block in epoll_wait);
	// a processor keeper's own is not there to take (keeper_linux.go).
	return max(1, runtime.GOMAXPROCS(0)-keptProcessors()-1)
}

// limitsHint adds to a failure to load the data directory, when a
// filter in it is beyond the per-filter limit (the one limit loading
// applies: docs/DESIGN.md §8), that a larger limit loads it: the filter
// was accepted under another, such as the 16 GiB per filter before the
// default became DefaultMaxFilterBytes. Dropping data is never the
// advice.
func limitsHint(err error, cfg Config) error {
	if !errors.Is(err, errNoMemory) {
		return err
	}
	return fmt.Errorf("%w\nserver: the data holds a filter larger than --maxmemory-per-filter %s allows: "+
		"start with larger limits to load it, e.g. --maxmemory-per-filter unlimited, rather than dropping data",
		err, humanLimit(cfg.MaxFilterBytes))
}

// sweep deletes expired keys ten times a second until shutdown, and
// with ManageGoRuntime sets the memory limit then and after each garbage
// collection (afterEachGC).
func (s *Server) sweep(m *memstore) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	collected := make(chan struct{}, 1)
	if s.cfg.ManageGoRuntime {
		afterEachGC(collected, s.ctx.Done())
	}
	limit := int64(-1)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-collected:
			limit = setMemoryLimit(limit, memoryRoom)
		case <-t.C:
			m.ks.sweep()
			s.stats.expired.Store(m.ks.expired.Load())
			if s.cfg.ManageGoRuntime {
				limit = setMemoryLimit(limit, memoryRoom)
			}
		}
	}
}

// The least room for garbage setMemoryLimit leaves. On the memory
// backend, little, so that the process stays within 1.2 times its
// filters' bytes plus a fixed part (a filter of 10^7 items held 42 MB of
// heap under GOGC=100 alone, 20 of them live; docs/BENCHMARKS.md, "The
// memory backend's room for garbage"): its adds and tests make no
// garbage, and BF.MADD little. On the Redis backend, whose GOGC is off
// and whose client makes about four objects of garbage an item, 64 MiB
// (redisstore_gc.go).
const (
	memoryRoom = 4 << 20
	redisRoom  = 64 << 20
)

// setMemoryLimit sets Go's soft memory limit to what the process holds
// live (the heap marked by the last collection, and the runtime's other
// memory: stacks, buffers) plus room for garbage, so that the garbage of
// commands is collected long before the heap doubles (with GOGC=100
// alone, 1 GiB of filters could grow to 2 GiB). The room is the largest
// of least, 1/8 of the live heap, and the bytes a collection has to
// scan: filters' bit arrays are pointer-free, so a collection neither
// scans nor moves them and large filters get a tight limit; but a
// million small filters are millions of small objects with pointers, a
// collection's cost grows with them, and a room smaller than they are
// made collections take most of the CPU of a workload creating keys
// (BF.ADD on new keys: 58% of its CPU in the collector with a room of
// 64 MiB at 1.5 million keys). With the scannable bytes as room, the
// collector's work is at most about one scan per scannable byte
// allocated, as GOGC=100 gives. It returns the limit set (unchanged
// within 1%).
func setMemoryLimit(current, least int64) int64 {
	live, other, scan := liveMemory()
	want := int64(live+other) + max(int64(live/8), least, int64(scan))
	if current > 0 && want > current*99/100 && want < current*101/100 {
		return current
	}
	debug.SetMemoryLimit(want)
	return want
}

// memorySamples are the runtime metrics liveMemory reads.
var memorySamples = []rtmetrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
	{Name: "/gc/scan/total:bytes"},
}

// liveMemory returns the heap marked live by the last collection, the
// runtime's other memory that the soft limit counts and collecting
// cannot free (outside the heap, and the unused parts of the heap's
// spans that hold objects: fragmentation), and the bytes a collection
// scans (heap objects with pointers, stacks, globals). Left out of other,
// fragmentation ate the room: with 13 MiB of it and a room of 4 MiB the
// limit stood below the heap, and the collector ran 272 times a second
// (TestMemoryLimitRoomAboveFragmentation).
func liveMemory() (live, other, scan uint64) {
	s := slices.Clone(memorySamples)
	rtmetrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != rtmetrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	reclaimable := v(2) + v(3) + v(4) // objects, free and released heap memory
	if total := v(1); total > reclaimable {
		other = total - reclaimable
	}
	return v(0), other, v(5)
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
		"dir", s.cfg.Dir, "appendfsync", s.cfg.AppendFsync, "auth", s.cfg.RequirePass != "",
		"maxmemory", humanLimit(s.cfg.MaxMemory), "maxmemory_from", s.memFrom,
		"maxmemory_per_filter", humanLimit(s.cfg.MaxFilterBytes))
	if lim, _ := s.machine.limit(); lim == 0 && s.backendName() == "memory" && s.cfg.MaxMemory == Unlimited {
		s.log.Warn("the machine's memory could not be read, so filters have no total memory limit: set --maxmemory")
	}
	if s.backendName() != "memory" && s.maxMemorySet {
		s.log.Warn("--maxmemory does not apply to the Redis backend: set Redis's own maxmemory, with a noeviction policy")
	}
	s.startLoops()
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

// startLoops starts the event loops (once): on failure, connections are
// served by goroutines.
func (s *Server) startLoops() {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.holdProcessor() // when connections are served by goroutines after all
	if s.loopsN == 0 || s.loops != nil {
		return
	}
	// The loops may block in the kernel, keeping their processors, when
	// one is left for everything else in the process (other Servers'
	// blocking loops count too: reserveBlocking) and the runtime's
	// preemption signals can interrupt them (loop_linux.go, eventLoop).
	block := preemptSignals() && reserveBlocking(s.loopsN)
	for i := range s.loopsN {
		l, err := newEventLoop(s, s.metrics.shards[1+i], block)
		if err != nil {
			s.log.Warn("no event loop; serving each connection with a goroutine", "err", err)
			if block { // the loops started release theirs as they end
				blockingLoops.Add(-int64(s.loopsN - i))
			}
			for _, l := range s.loops {
				l.request(loopStop)
			}
			s.loops, s.loopsN = nil, 0
			return
		}
		s.loops = append(s.loops, l)
		go l.run()
	}
}

// preemptSignals reports whether the runtime preempts goroutines with
// signals, which interrupt a goroutine asleep in the kernel. The runtime
// reads GODEBUG once, at startup, so this does too (preemptSignalsIn).
func preemptSignals() bool { return preemptOn }

var preemptOn = preemptSignalsIn(os.Getenv("GODEBUG"))

// preemptSignalsIn reports whether the GODEBUG value godebug leaves the
// preemption signals on: any asyncpreemptoff other than 0 turns them
// off, and the last setting counts, as in the runtime's parsing.
func preemptSignalsIn(godebug string) bool {
	on := true
	for _, kv := range strings.Split(godebug, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "asyncpreemptoff="); ok {
			if n, err := strconv.Atoi(v); err == nil { // the runtime ignores a value that is not a number
				on = n == 0
			}
		}
	}
	return on
}

// blockingLoops is the number of event loops of every Server in the
// process, and of processor keepers (keeper_linux.go), that block in
// epoll_wait holding a processor. Together they
// must leave one processor (GOMAXPROCS) to everything else: two Servers
// each counting on the one left would take both of a two-processor
// process, and every other goroutine would wait for a preemption signal
// to free one, about 10 ms each time.
var blockingLoops atomic.Int64

// reserveBlocking counts n more blocking loops if, with them, the
// process's blocking loops still leave a processor, and reports whether
// it did. Each loop that blocks gives its place back when it ends (run).
func reserveBlocking(n int) bool {
	for {
		cur := blockingLoops.Load()
		if cur+int64(n) >= int64(runtime.GOMAXPROCS(0)) {
			return false
		}
		if blockingLoops.CompareAndSwap(cur, cur+int64(n)) {
			return true
		}
	}
}

// accept starts serving one connection, or refuses it past MaxClients:
// on an event loop (round-robin) when there are loops and nc is a
// socket, else with a goroutine of its own.
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
	if len(s.loops) > 0 {
		l := s.loops[s.nextLoop%len(s.loops)]
		if c, err := s.newLoopConn(nc, s.nextID, l); err == nil {
			s.nextLoop++
			s.conns[c] = struct{}{}
			s.connWG.Add(1)
			s.mu.Unlock()
			s.stats.clients.Add(1)
			if !l.add(c.lc) {
				c.lc.release()
			}
			return
		}
	}
	c := s.newStreamConn(nc, s.nextID)
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	s.mu.Unlock()
	s.stats.clients.Add(1)
	go func() {
		defer s.connClosed(c)
		c.serve()
	}()
}

// connClosed ends the bookkeeping of a closed connection.
func (s *Server) connClosed(c *conn) {
	c.gone.Store(true)
	s.track.disable(c)
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.stats.clients.Add(-1)
	s.connWG.Done()
}

// connByID returns the open connection with id, or nil.
func (s *Server) connByID(id int64) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.id == id {
			return c
		}
	}
	return nil
}

// serveMetrics starts the HTTP endpoint: /metrics, and /debug/pprof/
// when cfg.Pprof. It warns when the address is not loopback: nothing
// there asks for a credential.
func (s *Server) serveMetrics() error {
	ln, err := net.Listen("tcp", s.cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("server: metrics listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	if s.cfg.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	s.mu.Lock()
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Unlock()
	go s.httpSrv.Serve(ln)
	s.log.Info("metrics serving", "addr", ln.Addr().String(), "path", "/metrics", "pprof", s.cfg.Pprof)
	if !isLoopback(ln.Addr()) {
		s.log.Warn("the metrics endpoint listens beyond loopback and asks for no credential: "+
			"whoever reaches it reads the metrics (and, with pprof, profiles the process)", "addr", ln.Addr().String())
	}
	return nil
}

// isLoopback reports whether a listener's address is reachable only from
// this machine (an unspecified address, ":port", is every interface).
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
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
// fsynced, and a final snapshot). Replies still unsent after
// shutdownWriteGrace (a client not reading them) are dropped with their
// connection. It waits for the clients until ctx is done, then closes
// their connections. Later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutOnce.Do(func() {
		cutoff := time.Now().Add(shutdownWriteGrace)
		s.writeCutoff.Store(cutoff.UnixNano()) // before closing: see conn.setWriteDeadline
		s.closing.Store(true)
		s.log.Info("shutting down")
		s.mu.Lock()
		if s.ln != nil {
			s.ln.Close()
		}
		for c := range s.conns {
			// End each client's input: a command being run finishes
			// and its reply is sent; then the read fails and the
			// connection closes. A reply the client does not take
			// within the grace ends the connection too. (The event
			// loops do the same for theirs: loopClose.)
			if c.nc == nil {
				continue
			}
			if tc, ok := c.nc.(*net.TCPConn); ok {
				tc.CloseRead()
			} else {
				c.nc.SetReadDeadline(time.Now())
			}
			c.nc.SetWriteDeadline(cutoff)
		}
		hs, loops := s.httpSrv, s.loops
		s.mu.Unlock()
		for _, l := range loops {
			l.request(loopClose)
		}
		waited := make(chan struct{})
		go func() { s.connWG.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-ctx.Done():
			s.log.Warn("shutdown: clients still running; closing their connections and the backend")
			s.mu.Lock()
			for c := range s.conns {
				if c.nc != nil {
					c.nc.Close()
				}
			}
			s.mu.Unlock()
			for _, l := range loops {
				l.request(loopForce)
			}
		}
		s.cancel()
		if hs != nil {
			hs.Close()
		}
		if err := s.close(); err != nil {
			s.shutErr = err
			s.log.Error("shutdown: closing the data failed", "err", err)
		} else {
			s.log.Info("shutdown complete")
		}
		for _, l := range loops {
			l.request(loopStop)
			<-l.done
		}
		s.mu.Lock()
		unhold := s.unhold
		s.mu.Unlock()
		if unhold != nil {
			unhold()
		}
		close(s.done)
	})
	<-s.done
	return s.shutErr
}

// close saves and closes the data: the persistence (a last snapshot),
// then the backend.
func (s *Server) close() error {
	var err error
	if s.persist != nil {
		if perr := s.persist.close(); perr != nil {
			err = fmt.Errorf("server: close persistence: %w", perr)
		}
	}
	if berr := s.backend.Close(); berr != nil && err == nil {
		err = fmt.Errorf("server: close backend: %w", berr)
	}
	return err
}

// shutdownWriteGrace is how long Shutdown lets clients take the replies
// still being sent.
const shutdownWriteGrace = 2 * time.Second

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
