package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestOutputFilesAreDurable: every command that writes a file writes it
// as a crash cannot lose or tear it: a temporary file beside the target,
// fsynced, renamed over the target, then the directory fsynced. The CLI
// runs as a process of its own under strace, which records those system
// calls; without strace (or without the right to trace) the test is
// skipped.
func TestOutputFilesAreDurable(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	addr := startBloomery(t)
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	if err := client.BFMAdd(context.Background(), "seen", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	input := writeTemp(t, "words.txt", "apple\nbanana\n")
	tests := []struct {
		name, target string
		args         []string
	}{
		{"build -o", "built.bloom", []string{"build", "-n", "100", "-p", "0.01", "-o", "%s", input}},
		{"dedup --state", "state.bloom", []string{"dedup", "--state", "%s", input}},
		{"pull", "pulled.bloom", []string{"pull", "bloomery://" + addr + "/seen", "%s"}},
		{"calc --plot", "plot.svg", []string{"calc", "-n", "100", "-p", "0.01", "--plot", "%s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := filepath.Join(dir, tt.target)
			trace := filepath.Join(t.TempDir(), "strace.out")
			args := append([]string{"-f", "-y", "-qq", "-o", trace,
				"-e", "trace=fsync,fdatasync,rename,renameat,renameat2", os.Args[0]}, withPath(tt.args, target)...)
			cmd := exec.Command(strace, args...)
			cmd.Env = append(os.Environ(), testMainEnv+"=1")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if errors.As(err, &exit) && strings.Contains(string(out), "ptrace") {
				t.Skipf("strace cannot trace here: %s", out)
			}
			if err != nil {
				t.Fatalf("%v: %v\n%s", tt.args, err, out)
			}
			log, err := os.ReadFile(trace)
			if err != nil {
				t.Fatal(err)
			}
			if why := durableWrite(string(log), target); why != "" {
				t.Errorf("%s was not written durably: %s; system calls:\n%s", target, why, log)
			}
		})
	}
}

var (
	fsyncCall  = regexp.MustCompile(`\bf(?:data)?sync\(\d+<([^>]*)>\) = 0`)
	renameCall = regexp.MustCompile(`\brename(?:at2?)?\(.*"([^"]+)".*"([^"]+)".*\) = 0`)
)

// durableWrite checks the system calls in the strace log for target: an
// fsync of a file, its rename to target, then an fsync of target's
// directory. It says what is missing, or "" when nothing is.
func durableWrite(log, target string) string {
	var synced []string // fsynced so far
	renamed := false
	for line := range strings.SplitSeq(log, "\n") {
		if m := renameCall.FindStringSubmatch(line); m != nil && m[2] == target {
			tmp := m[1]
			if filepath.Dir(tmp) != filepath.Dir(target) {
				return "renamed from another directory: " + tmp
			}
			if !strings.Contains(strings.Join(synced, "\n")+"\n", tmp+"\n") {
				return "renamed over it without an fsync of " + tmp
			}
			renamed, synced = true, nil
		}
		if m := fsyncCall.FindStringSubmatch(line); m != nil {
			synced = append(synced, m[1])
			if renamed && m[1] == filepath.Dir(target) {
				return ""
			}
		}
	}
	if !renamed {
		return "no rename over it"
	}
	return "no fsync of its directory after the rename"
}
