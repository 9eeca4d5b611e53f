package server

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redis-cli against the server: one-shot commands in its raw (not a
// terminal), --no-raw and RESP3 forms, a session fed on stdin, --pipe and
// --scan, and a password. redis-cli is a dependency of the project's
// tests (scripts/install-deps, make redis): a missing one fails the test.

// redisCLIPath returns redis-cli's path or fails the test.
func redisCLIPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli is not installed (%v): run scripts/install-deps or make redis", err)
	}
	return path
}

// cliRunner runs redis-cli against one server.
type cliRunner struct {
	t    *testing.T
	path string
	port string
}

func newCLI(t *testing.T, addr string) *cliRunner {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return &cliRunner{t: t, path: redisCLIPath(t), port: port}
}

// run runs redis-cli with args, stdin as its input, and returns what it
// wrote to stdout; it fails the test if redis-cli fails or hangs.
func (r *cliRunner) run(stdin string, args ...string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.path, append([]string{"-h", "127.0.0.1", "-p", r.port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("redis-cli %q: %v (stderr %q)", args, err, stderr.String())
	}
	return string(out)
}

// expect runs redis-cli with args and compares its output with want.
func (r *cliRunner) expect(want string, args ...string) {
	r.t.Helper()
	if got := r.run("", args...); got != want {
		r.t.Errorf("redis-cli %q: got %q, want %q", args, got, want)
	}
}

func TestCLI(t *testing.T) {
	_, addr := startServer(t, Config{})
	cli := newCLI(t, addr)
	cli.expect("OK\n", "BF.RESERVE", "k", "0.01", "100")
	cli.expect("1\n", "BF.ADD", "k", "a")
	cli.expect("0\n", "BF.ADD", "k", "a")
	cli.expect("1\n", "BF.EXISTS", "k", "a")
	cli.expect("0\n", "BF.EXISTS", "k", "b")
	cli.expect("1\n1\n0\n", "BF.MADD", "k", "b", "c", "a")
	cli.expect("1\n1\n0\n", "BF.MEXISTS", "k", "b", "c", "zzz")
	size := strings.TrimSpace(cli.run("", "BF.INFO", "k", "SIZE"))
	if n, err := strconv.Atoi(size); err != nil || n <= 0 {
		t.Fatalf("BF.INFO k SIZE: %q", size)
	}
	cli.expect("Capacity\n100\nSize\n"+size+"\nNumber of filters\n1\nNumber of items inserted\n3\nExpansion rate\n2\n", "BF.INFO", "k")
	cli.expect(" 1) Capacity\n 2) (integer) 100\n 3) Size\n 4) (integer) "+size+"\n 5) Number of filters\n 6) (integer) 1\n"+
		" 7) Number of items inserted\n 8) (integer) 3\n 9) Expansion rate\n10) (integer) 2\n", "--no-raw", "BF.INFO", "k")
	cli.expect("1) (integer) 3\n", "--no-raw", "BF.INFO", "k", "ITEMS")
	cli.expect("(integer) 1\n", "--no-raw", "BF.ADD", "k", "d")
	cli.expect("(integer) 4\n", "--no-raw", "BF.CARD", "k")
	cli.expect("(true)\n", "-3", "BF.EXISTS", "k", "d")
	cli.expect("(false)\n", "-3", "--no-raw", "BF.ADD", "k", "d")
	cli.expect("Capacity 100\nSize "+size+"\nNumber of filters 1\nNumber of items inserted 4\nExpansion rate 2\n", "-3", "BF.INFO", "k")
	cli.expect("ERR bad error rate\n\n", "BF.RESERVE", "k", "abc", "100")
	cli.expect("(error) ERR item exists\n", "--no-raw", "BF.RESERVE", "k", "0.01", "100")
	cli.expect("PONG\n", "PING")
	cli.expect("1\n", "-n", "0", "DBSIZE")
	cli.expect("k\n", "--scan", "--pattern", "k*")
	cli.expect("MBbloom--\n", "TYPE", "k")
	info := cli.run("", "INFO")
	for _, part := range []string{"# Server", "redis_version:" + redisVersion, "# Keyspace", "db0:keys=1,"} {
		if !strings.Contains(info, part) {
			t.Errorf("redis-cli INFO lacks %q:\n%s", part, info)
		}
	}

	// An interactive-style session: commands typed on stdin, one a line.
	session := "BF.ADD s x\nBF.EXISTS s x\nBF.MEXISTS s x y\nBF.INFO s CAPACITY\nBF.RESERVE s 0.01 100\n" +
		"ECHO \"hello world\"\nbf.card s\nEXPIRE s 100\nTTL s\nPING\n"
	want := "1\n1\n1\n0\n100\nERR item exists\n\nhello world\n1\n1\n100\nPONG\n"
	if got := cli.run(session); got != want {
		t.Errorf("redis-cli session: got %q, want %q", got, want)
	}

	// --pipe: a thousand commands in RESP on stdin, then its own ECHO.
	var pipe strings.Builder
	for i := range 1000 {
		pipe.WriteString(encodeCommand("BF.ADD", "p", strconv.Itoa(i)))
	}
	if out := cli.run(pipe.String(), "--pipe"); !strings.Contains(out, "errors: 0, replies: 1000") {
		t.Errorf("redis-cli --pipe: %q", out)
	}
	card, err := strconv.Atoi(strings.TrimSpace(cli.run("", "BF.CARD", "p")))
	if err != nil || card < 980 || card > 1000 {
		t.Errorf("BF.CARD after --pipe of 1000 items: %d, %v", card, err)
	}
}

func TestCLIPassword(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "pw"})
	cli := newCLI(t, addr)
	cli.expect("NOAUTH Authentication required.\n\n", "BF.ADD", "k", "a")
	cli.expect("1\n", "-a", "pw", "--no-auth-warning", "BF.ADD", "k", "a")
	cli.expect("1\n", "--user", "default", "--pass", "pw", "--no-auth-warning", "BF.EXISTS", "k", "a")
	if got := cli.run("BF.CARD k\nAUTH nope\nAUTH pw\nBF.CARD k\n"); got != "NOAUTH Authentication required.\n\n"+
		"WRONGPASS invalid username-password pair or user is disabled.\n\nOK\n1\n" {
		t.Errorf("redis-cli session with AUTH: %q", got)
	}
}
