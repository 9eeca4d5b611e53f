package server

import (
	goflag "flag"
	"os"
	"testing"
)

// The server's tests run twice (TestMain): first with connections served
// by event loops (the default on Linux), then with a goroutine each
// (Config.GoroutinePerConn), so every behaviour is checked on both paths.
// Tests that do not depend on how connections are served run in the
// first pass only (onePath). Fuzzing runs once.

// streamPass is set during the second pass.
var streamPass bool

func TestMain(m *testing.M) {
	goflag.Parse()
	code := m.Run()
	if code == 0 && haveEventLoop && !fuzzing() && !benchmarking() {
		streamPass = true
		code = m.Run()
	}
	os.Exit(code)
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
// does.
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
