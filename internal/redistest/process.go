package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	readyTimeout = 10 * time.Second // from spawn until the server is ready
	stopGrace    = 5 * time.Second  // from SIGTERM until SIGKILL
	bindAttempts = 5                // spawns with fresh ports when a bind fails
	logName      = "redis.log"
)

// installHint is the end of every "not installed" failure.
const installHint = "install it with `make redis` or " +
	"`apt-get install -y redis-server redis-tools`"

// errAddrInUse marks a start that failed because a port was taken between
// picking it and the server binding it: the caller retries with new ports.
var errAddrInUse = errors.New("port taken before redis-server could bind it")

// binary returns the path of a Redis program, or fails the test: a missing
// server is a broken machine, never a reason to skip.
func binary(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		tb.Fatalf("redistest: %s not found on PATH: %s", name, installHint)
	}
	return path
}

// process is one running redis-server whose output goes to dir/redis.log.
type process struct {
	cmd     *exec.Cmd
	log     string
	logFrom int64         // size of the log when this process started
	done    chan struct{} // closed once the process has exited and been reaped
	err     error         // Wait's result, set before done is closed
}

// spawn starts redis-server in dir with args and waits until it is ready
// on addr. A server that exits because a port is taken yields errAddrInUse.
func spawn(server, dir, addr string, args []string) (*process, error) {
	log := filepath.Join(dir, logName)
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own copy
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(server, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redistest: start %s: %w", server, err)
	}
	p := &process{cmd: cmd, log: log, logFrom: st.Size(), done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()

	deadline := time.Now().Add(readyTimeout)
	for {
		if p.ready(addr) {
			return p, nil
		}
		select {
		case <-p.done:
			out := p.output()
			if strings.Contains(out, "Address already in use") {
				return nil, errAddrInUse
			}
			return nil, fmt.Errorf("redistest: redis-server on %s exited (%v) before it was ready; log:\n%s",
				addr, p.err, tail(out, 20))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("redistest: redis-server on %s not ready within %v; log:\n%s",
				addr, readyTimeout, tail(p.output(), 20))
		}
	}
}

// ready reports whether the server at addr is this process (not another
// that took the port first) and has finished loading any data.
func (p *process) ready(addr string) bool {
	info, err := call(addr, 200*time.Millisecond, "INFO", "server", "persistence")
	if err != nil {
		return false
	}
	lines := strings.Split(strings.ReplaceAll(info, "\r", ""), "\n")
	return slices.Contains(lines, "process_id:"+strconv.Itoa(p.cmd.Process.Pid)) &&
		slices.Contains(lines, "loading:0")
}

// stop sends SIGTERM, then SIGKILL if the server has not exited after
// stopGrace, and waits until it is reaped.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		p.kill()
	}
}

// kill sends SIGKILL and waits until the process is reaped.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// output returns what this process (not earlier ones in the same dir) has
// logged so far.
func (p *process) output() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.log, err)
	}
	if int64(len(b)) >= p.logFrom {
		b = b[p.logFrom:]
	}
	return string(b)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort returns a loopback TCP port that was free a moment ago. Another
// process may take it before the server binds it; spawn reports that as
// errAddrInUse and the callers pick again.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// do sends one command in RESP to addr on a fresh connection and returns
// the reply of a simple string, integer or bulk string. An error reply
// comes back as an error; arrays are not supported.
func do(addr string, args ...string) (string, error) {
	return call(addr, 5*time.Second, args...)
}

// call is do with a time limit for the whole exchange.
func call(addr string, timeout time.Duration, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("redistest: empty reply to %s", args[0])
	}
	switch body := line[1:]; line[0] {
	case '+', ':':
		return body, nil
	case '-':
		return "", fmt.Errorf("redis: %s", body)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return "", fmt.Errorf("redistest: nil or bad bulk reply %q to %s", line, args[0])
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	default:
		return "", fmt.Errorf("redistest: unsupported reply %q to %s", line, args[0])
	}
}
