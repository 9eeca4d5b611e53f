package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawPing sends PING as hand-written RESP on its own connection, so the
// test does not lean on the package's own client.
func rawPing(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

func mustDo(t *testing.T, addr string, args ...string) string {
	t.Helper()
	reply, err := do(addr, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", addr, args, err)
	}
	return reply
}

func TestStartAnswersPingWithoutPersistence(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	s := Start(t)
	t.Logf("Start took %v", time.Since(begin))
	if err := rawPing(s.Addr()); err != nil {
		t.Fatal(err)
	}
	if want := "127.0.0.1:" + strconv.Itoa(s.Port()); s.Addr() != want {
		t.Errorf("Addr() = %q, want %q", s.Addr(), want)
	}
	info := mustDo(t, s.Addr(), "INFO", "persistence")
	if !strings.Contains(info, "aof_enabled:0") {
		t.Errorf("AOF enabled by default:\n%s", info)
	}
	mustDo(t, s.Addr(), "SET", "k", "v")
	s.Stop()
	if _, err := os.Stat(filepath.Join(s.Dir(), "dump.rdb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stop left an RDB file (stat: %v): persistence should be off", err)
	}
	if err := rawPing(s.Addr()); err == nil {
		t.Error("server still answers after Stop")
	}
	s.Stop() // stopping twice does nothing
	s.Kill()
}

func TestRestartKeepsPortAndPersistedData(t *testing.T) {
	t.Parallel()
	s := Start(t, "--appendonly", "yes")
	port := s.Port()
	mustDo(t, s.Addr(), "SET", "k", "v")
	begin := time.Now()
	s.Restart(t)
	t.Logf("Restart took %v", time.Since(begin))
	if s.Port() != port {
		t.Fatalf("port %d after Restart, was %d", s.Port(), port)
	}
	if err := rawPing(s.Addr()); err != nil {
		t.Fatal(err)
	}
	if got := mustDo(t, s.Addr(), "GET", "k"); got != "v" {
		t.Errorf("GET k after Restart with AOF = %q, want v", got)
	}
}

func TestRestartWithoutPersistenceStartsEmpty(t *testing.T) {
	t.Parallel()
	s := Start(t)
	mustDo(t, s.Addr(), "SET", "k", "v")
	s.Restart(t)
	if got := mustDo(t, s.Addr(), "EXISTS", "k"); got != "0" {
		t.Errorf("EXISTS k after Restart without persistence = %s, want 0", got)
	}
}

func TestKillMakesUnreachableAndRestartRecovers(t *testing.T) {
	t.Parallel()
	s := Start(t)
	s.Kill()
	if err := rawPing(s.Addr()); err == nil {
		t.Fatal("server still answers after Kill")
	}
	s.Restart(t)
	if err := rawPing(s.Addr()); err != nil {
		t.Fatalf("after Kill and Restart: %v", err)
	}
}

func TestSpawnReportsTakenPort(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	p, err := spawn(binary(t, "redis-server"), dir, l.Addr().String(),
		[]string{"--port", port, "--bind", "127.0.0.1", "--dir", dir})
	if !errors.Is(err, errAddrInUse) {
		if p != nil {
			p.kill()
		}
		t.Fatalf("spawn on a taken port: %v, want errAddrInUse", err)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, so a test can check what a failing Start says.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs f with a fatalRecorder in its own goroutine and returns
// what it passed to Fatalf ("" if nothing).
func fatalOf(t *testing.T, f func(tb testing.TB)) string {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r.msg
}

func TestStartWithoutRedisFailsWithInstallHint(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	msg := fatalOf(t, func(tb testing.TB) { Start(tb) })
	if !strings.Contains(msg, "make redis") || !strings.Contains(msg, "apt-get") {
		t.Errorf("Start without redis-server: Fatalf(%q), want an install hint", msg)
	}
}

func TestStartBadArgumentFailsWithLog(t *testing.T) {
	t.Parallel()
	msg := fatalOf(t, func(tb testing.TB) { Start(tb, "--no-such-directive", "1") })
	if !strings.Contains(msg, "exited") || !strings.Contains(msg, "no-such-directive") {
		t.Errorf("Start with a bad argument: Fatalf(%q), want the exit and the log", msg)
	}
}

func TestStartClusterCoversSlotsWithThreeMasters(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := StartCluster(t)
	t.Logf("StartCluster took %v", time.Since(begin))
	addrs := c.Addrs()
	if len(addrs) != 3 {
		t.Fatalf("Addrs() = %v, want 3", addrs)
	}
	for _, a := range addrs {
		masters, slots := 0, 0
		nodes := mustDo(t, a, "CLUSTER", "NODES")
		for line := range strings.Lines(nodes) {
			f := strings.Fields(line)
			if len(f) < 8 || !strings.Contains(f[2], "master") {
				continue
			}
			masters++
			n := 0
			for _, r := range f[8:] {
				lo, hi, _ := strings.Cut(r, "-")
				l, err1 := strconv.Atoi(lo)
				h, err2 := strconv.Atoi(hi)
				if hi == "" {
					h, err2 = l, nil
				}
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: bad slot range %q in %q", a, r, line)
				}
				n += h - l + 1
			}
			if n == 0 {
				t.Errorf("%s: master without slots: %q", a, line)
			}
			slots += n
		}
		if masters != 3 || slots != clusterSlots {
			t.Errorf("%s sees %d masters serving %d slots, want 3 and %d:\n%s",
				a, masters, slots, clusterSlots, nodes)
		}
	}
	// Exactly one master owns a key; the others redirect.
	owners := 0
	for _, a := range addrs {
		_, err := do(a, "SET", "some-key", "1")
		switch {
		case err == nil:
			owners++
		case !strings.Contains(err.Error(), "MOVED"):
			t.Errorf("SET on %s: %v, want OK or MOVED", a, err)
		}
	}
	if owners != 1 {
		t.Errorf("%d nodes accepted SET some-key, want 1", owners)
	}
}

func TestClusterNodeRestartRejoins(t *testing.T) {
	t.Parallel()
	c := StartCluster(t)
	n := c.Nodes()[1]
	n.Kill()
	n.Restart(t)
	begin := time.Now()
	c.WaitOK(t)
	t.Logf("cluster ok %v after restarting a master", time.Since(begin))
	if _, err := do(n.Addr(), "SET", "{x}k", "1"); err != nil && !strings.Contains(err.Error(), "MOVED") {
		t.Errorf("SET on the restarted node: %v, want OK or MOVED", err)
	}
}

func TestCommandCalls(t *testing.T) {
	got := CommandCalls("# Commandstats\r\ncmdstat_getrange:calls=3,usec=2,usec_per_call=0.67\r\ncmdstat_exec:calls=12,usec=9\r\n")
	if len(got) != 2 || got["getrange"] != 3 || got["exec"] != 12 {
		t.Fatalf("CommandCalls: %v", got)
	}
}
