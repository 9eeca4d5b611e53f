package redisbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server that StartRedis started for cmd/redis and
// its test: listening on 127.0.0.1 only, on a port picked free for it, in
// a temporary directory of its own, without persistence.
type RedisServer struct {
	cmd  *exec.Cmd
	dir  string
	addr string
	done chan struct{} // closed once the process has exited and been reaped
}

const (
	redisReady     = 10 * time.Second // from start until the server answers
	redisStopGrace = 5 * time.Second  // from SIGTERM until SIGKILL
	redisAttempts  = 5                // starts with fresh ports when a bind fails
)

// errPortTaken marks a start that failed because another process took the
// port between picking it and the server binding it.
var errPortTaken = errors.New("port taken before redis-server could bind it")

// StartRedis runs bin (a redis-server; "redis-server" looks it up on PATH)
// with extra arguments after the defaults (e.g. "--loadmodule", path, or
// "--appendonly", "yes") and returns once it answers, is the process just
// started and has loaded nothing. Call Stop when done; on Linux the server
// is also killed if this process dies first.
func StartRedis(bin string, extra ...string) (*RedisServer, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%w (install redis-server, e.g. `make redis` at the repository root)", err)
	}
	dir, err := os.MkdirTemp("", "bench-redis-")
	if err != nil {
		return nil, err
	}
	for range redisAttempts {
		var s *RedisServer
		if s, err = startRedis(path, dir, extra); err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

func startRedis(path, dir string, extra []string) (*RedisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own copy
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no"}, extra...)
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &RedisServer{cmd: cmd, dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	for deadline := time.Now().Add(redisReady); time.Now().Before(deadline); {
		if s.answers(c) {
			return s, nil
		}
		select {
		case <-s.done:
			out, _ := os.ReadFile(log.Name())
			if strings.Contains(string(out), "Address already in use") {
				return nil, errPortTaken
			}
			return nil, fmt.Errorf("redis-server on %s exited before it was ready; log:\n%s", s.addr, out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	s.kill()
	return nil, fmt.Errorf("redis-server on %s not ready within %v", s.addr, redisReady)
}

// answers reports whether the server on s.addr is this process (not
// another that took the port first) and has finished loading.
func (s *RedisServer) answers(c *redis.Client) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	info, err := c.Info(ctx).Result() // the default sections include server and persistence
	if err != nil {
		return false
	}
	f := InfoFields(info)
	return f["process_id"] == strconv.Itoa(s.cmd.Process.Pid) && f["loading"] == "0"
}

// Addr is the server's "127.0.0.1:port".
func (s *RedisServer) Addr() string { return s.addr }

// Pid is the server's process ID.
func (s *RedisServer) Pid() int { return s.cmd.Process.Pid }

// Stop ends the server (SIGTERM, then SIGKILL after a grace period),
// waits for it and removes its directory.
func (s *RedisServer) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(redisStopGrace):
		s.kill()
	}
	os.RemoveAll(s.dir)
}

func (s *RedisServer) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// InfoFields parses the "name:value" lines of an INFO reply.
func InfoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if name, value, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(name, "#") {
			out[name] = value
		}
	}
	return out
}

// KillWithParent has the kernel kill cmd's process when this process dies
// (Linux; elsewhere it does nothing): a benchmark's servers must not
// outlive it.
func KillWithParent(cmd *exec.Cmd) { setDeathSignal(cmd) }
