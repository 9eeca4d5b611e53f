// Package redistest runs real Redis servers for tests: a single
// redis-server (Start) or a three-master Redis Cluster (StartCluster). It
// exists so that code talking to Redis is tested against Redis itself, not
// a mock.
//
// # Guarantees
//
//   - Each server is a fresh redis-server process that this package
//     started, listening on 127.0.0.1 on a port picked free for it, with
//     its own temporary directory (tb.TempDir) as working dir. Tests never
//     reach a server someone else started.
//   - No persistence unless asked: servers run with --save "" and
//     --appendonly no; arguments given to Start come after these and
//     override them.
//   - Start and Restart return only once the server is ready: it answers
//     on its port, is the process just started (not another that took
//     the port) and has loaded its data. StartCluster returns only once
//     every node reports cluster_state:ok with all 16384 slots assigned
//     and known to be served.
//   - Servers stop when the test ends (tb.Cleanup: SIGTERM, then SIGKILL
//     after 5 s) and are reaped before the temporary directory is removed.
//     On Linux they are also killed if the test binary dies without
//     running its cleanups.
//   - A missing redis-server or redis-cli fails the test with a hint on
//     how to install it (`make redis`); it is never skipped.
//
// # Concurrency
//
// Server methods are safe to call from several goroutines, but Start,
// StartCluster and Restart call tb.Fatalf and so belong in the test's own
// goroutine. Tests using different servers may run in parallel.
//
// # Limits
//
// Ports are picked by binding 127.0.0.1:0 and closing it, so another
// process can take a port before Redis binds it; startup then retries
// with new ports (a few times), but Restart must keep its port and fails
// the test if another process has taken it.
package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
)

// Server is one redis-server started by Start.
type Server struct {
	bin  string
	dir  string
	port int
	args []string // everything but --port and --dir

	mu   sync.Mutex
	proc *process // nil while stopped
}

// Start runs a redis-server on a free loopback port in a fresh temporary
// directory, without persistence, with args appended to its command line
// (for example "--appendonly", "yes"). It returns once the server is
// ready, and stops the server when the test ends.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	return start(tb, tb.TempDir(), args, nil)
}

// start runs a server in dir, retrying with new ports while a bind fails.
// extraPort, if not nil, asks for one more free port (the cluster bus)
// and returns the arguments that use it.
func start(tb testing.TB, dir string, args []string, extraPort func(int) []string) *Server {
	tb.Helper()
	s, err := startIn(binary(tb, "redis-server"), dir, args, extraPort)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(s.Stop) // after tb.TempDir, so it runs before the dir is removed
	return s
}

// startIn is start without a test: it returns its error.
func startIn(bin, dir string, args []string, extraPort func(int) []string) (*Server, error) {
	s := &Server{bin: bin, dir: dir}
	var err error
	for range bindAttempts {
		if s.port, err = freePort(); err != nil {
			break
		}
		s.args = append([]string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, args...)
		if extraPort != nil {
			var p int
			if p, err = freePort(); err != nil {
				break
			}
			s.args = append(s.args, extraPort(p)...)
		}
		if err = s.spawn(); !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if errors.Is(err, errAddrInUse) {
		return nil, fmt.Errorf("redistest: starting redis-server in %s: %w (%d ports tried)", dir, err, bindAttempts)
	}
	if err != nil {
		return nil, fmt.Errorf("redistest: starting redis-server in %s: %w", dir, err)
	}
	return s, nil
}

// StartMain is Start for a TestMain, which has no testing.TB yet (for
// Example functions, which must run against a real server too): it
// returns an error instead of failing a test, and the caller ends the
// server with Close, which also removes its directory.
func StartMain(args ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redistest: redis-server not found on PATH: %s", installHint)
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	s, err := startIn(bin, dir, args, nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Close stops a server StartMain started and removes its directory.
func (s *Server) Close() {
	s.Stop()
	os.RemoveAll(s.dir)
}

// spawn starts the process on s.port; the caller holds s.mu or owns s.
func (s *Server) spawn() error {
	args := append([]string{"--port", strconv.Itoa(s.port), "--dir", s.dir}, s.args...)
	p, err := spawn(s.bin, s.dir, s.Addr(), args)
	if err != nil {
		return err
	}
	s.proc = p
	return nil
}

// Addr returns the server's "127.0.0.1:port".
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Port returns the server's TCP port; it stays the same across Restart.
func (s *Server) Port() int { return s.port }

// Dir returns the server's working directory, where it keeps its log
// (redis.log) and any RDB or AOF files.
func (s *Server) Dir() string { return s.dir }

// Stop shuts the server down with SIGTERM (SIGKILL if it has not exited
// after 5 s) and waits for it. Redis saves nothing on the way unless
// persistence was asked for. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.end((*process).stop)
}

// Kill ends the server with SIGKILL, as in a crash, and waits for it:
// nothing is saved. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.end((*process).kill)
}

// end ends the process, if any, with stop or kill; the caller holds s.mu.
func (s *Server) end(how func(*process)) {
	if s.proc != nil {
		how(s.proc)
		s.proc = nil
	}
}

// Restart stops the server if it is running and starts it again with the
// same port, directory and arguments, so data survives if persistence was
// asked for. It returns once the server is ready, and fails the test if
// the port has been taken in the meantime.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.end((*process).stop)
	if err := s.spawn(); err != nil {
		tb.Fatalf("redistest: restarting redis-server on %s: %v", s.Addr(), err)
	}
}
