package server

import (
	"bytes"
	"errors"
	goflag "flag"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// The server's tests run twice (TestMain): with connections served by
// event loops (the default on Linux), and with a goroutine each
// (Config.GoroutinePerConn), so every behaviour is checked on both paths.
// Tests that do not depend on how connections are served run in the
// first pass only (onePath). Fuzzing and benchmarks run once.
//
// The second pass runs in a process of its own, started with the same
// flags beside the first (secondPass), and its output follows the
// first's: many of the tests wait (on timeouts, fsyncs, killed and
// restarted servers) rather than compute, and one after the other the
// two passes left a core idle for minutes of make test.

// streamPass is set during the second pass.
var streamPass bool

// passEnv names the environment variable that makes a test process the
// second pass.
const passEnv = "BLOOMERY_TEST_SECOND_PASS"

func TestMain(m *testing.M) {
	goflag.Parse()
	if os.Getenv(passEnv) != "" {
		streamPass = true
		os.Exit(m.Run())
	}
	if !haveEventLoop || fuzzing() || benchmarking() {
		os.Exit(m.Run())
	}
	second, err := startSecondPass()
	if err != nil { // run it here, after the first
		if !errors.Is(err, errProfiles) {
			fmt.Fprintf(os.Stderr, "server tests: the second pass runs after the first: %v\n", err)
		}
		code := m.Run()
		if code == 0 {
			streamPass = true
			code = m.Run()
		}
		os.Exit(code)
	}
	code := m.Run()
	code2 := second.wait()
	os.Exit(max(code, code2))
}

// secondPass is the test process running the second pass.
type secondPass struct {
	cmd *exec.Cmd
	out bytes.Buffer // its stdout and stderr, printed after the first pass
}

// errProfiles: the tests write profiles (coverage, CPU, …), which two
// processes would write over each other; one process runs both passes.
var errProfiles = errors.New("the tests write profiles")

// startSecondPass starts this test binary again, with the same flags,
// as the second pass.
func startSecondPass() (*secondPass, error) {
	for _, name := range []string{"coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace"} {
		if f := goflag.Lookup("test." + name); f != nil && f.Value.String() != "" {
			return nil, errProfiles
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &secondPass{cmd: exec.Command(exe, os.Args[1:]...)}
	p.cmd.Env = append(os.Environ(), passEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.SysProcAttr = dieWithParent()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// wait waits for the second pass, copies its output to ours, and
// returns its exit code (1 if it could not say).
func (p *secondPass) wait() int {
	err := p.cmd.Wait()
	os.Stdout.Write(p.out.Bytes())
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "server tests: the second pass: %v\n", err)
	return 1
}

// fuzzing reports whether this process fuzzes (or is a fuzzing worker).
func fuzzing() bool {
	f := goflag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// benchmarking reports whether benchmarks run: once is enough.
func benchmarking() bool {
	f := goflag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

// pathConfig returns cfg set to serve connections as the current pass
// does: event loops in the first, goroutines in the second.
func pathConfig(cfg Config) Config {
	if streamPass {
		cfg.GoroutinePerConn = true
	}
	return cfg
}

// onePath skips the second pass of a test that does not depend on how
// connections are served.
func onePath(t testing.TB) {
	t.Helper()
	if streamPass {
		t.Skip("does not depend on how connections are served; run in the first pass")
	}
}

// redisOnly is onePath for a test whose servers all have the Redis
// backend and are served as its configuration says, not as the pass
// says (pathConfig): the second pass would repeat the first.
func redisOnly(t testing.TB) {
	t.Helper()
	onePath(t)
}
