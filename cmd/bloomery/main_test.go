package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// testMainEnv, set to 1 in its environment, makes this test binary run
// the CLI (main) instead of the tests: tests run the CLI as a process of
// its own that way, with real standard streams and exit status.
const testMainEnv = "BLOOMERY_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(testMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// runCLI runs the command line in-process and returns its exit code,
// standard output and standard error.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRoot(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // substring of stdout
		stderr     string // substring of stderr
		emptyOut   bool
		emptyError bool
	}{
		{name: "no args prints help", args: nil, code: exitOK, stdout: "Available Commands:", emptyError: true},
		{name: "help flag", args: []string{"--help"}, code: exitOK, stdout: "calc", emptyError: true},
		{name: "help command", args: []string{"help", "calc"}, code: exitOK, stdout: "bloomery calc -n 1e6 -p 0.01", emptyError: true},
		{name: "unknown command", args: []string{"frobnicate"}, code: exitUsage, stderr: `unknown command "frobnicate"`, emptyOut: true},
		{name: "unknown command suggests", args: []string{"cacl"}, code: exitUsage, stderr: "did you mean calc?", emptyOut: true},
		{name: "unknown flag", args: []string{"--frobnicate"}, code: exitUsage, stderr: "unknown flag: --frobnicate", emptyOut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, stdout)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, stderr)
			}
			if tt.emptyOut && stdout != "" {
				t.Errorf("stdout = %q, want empty", stdout)
			}
			if tt.emptyError && stderr != "" {
				t.Errorf("stderr = %q, want empty", stderr)
			}
		})
	}
}
