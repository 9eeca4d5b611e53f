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
	fsyncCall  = regexp.MustCompile(`\bf(?:data)?sync\(\d+<([^>]*)>\)\s+= 0`)
	renameCall = regexp.MustCompile(`\brename(?:at2?)?\(.*"([^"]+)".*"([^"]+)".*\)\s+= 0`)
)

// durableWrite checks the system calls in the strace log for target: an
// fsync of a file, its rename to target, then an fsync of target's
// directory. It says what is missing, or "" when nothing is.
func durableWrite(log, target string) string {
	var synced []string // fsynced so far
	renamed := false
	for _, line := range joinResumed(log) {
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

// joinResumed returns the system calls of an strace -f log one per line:
// a call that another thread interrupted is logged as "PID call(args
// <unfinished ...>" and later "PID <... call resumed>rest"; the two
// halves are joined in the place of the resumed one, where the call
// completed.
func joinResumed(log string) []string {
	var lines []string
	open := map[string]string{} // pid → the first half of its call
	for line := range strings.SplitSeq(log, "\n") {
		pid, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest = strings.TrimSpace(rest) // strace pads the PID column
		switch {
		case strings.HasSuffix(rest, " <unfinished ...>"):
			open[pid] = strings.TrimSuffix(rest, " <unfinished ...>")
		case strings.HasPrefix(rest, "<... "):
			_, tail, ok := strings.Cut(rest, " resumed>")
			if first, had := open[pid]; ok && had {
				lines = append(lines, pid+" "+first+tail)
				delete(open, pid)
			}
		default:
			lines = append(lines, line)
		}
	}
	return lines
}

// TestDurableWriteReadsStrace: the strace log parser sees a call that a
// signal interrupted and strace logged in two halves (as a CI run did),
// and still refuses a rename with no fsync before it.
func TestDurableWriteReadsStrace(t *testing.T) {
	const dir = "/d"
	interrupted := `17372 fsync(5</d/.t.tmp-1> <unfinished ...>
17376 --- SIGURG {si_signo=SIGURG, si_code=SI_TKILL, si_pid=17372, si_uid=0} ---
17372 <... fsync resumed>)              = 0
17372 renameat(AT_FDCWD</w>, "/d/.t.tmp-1", AT_FDCWD</w>, "/d/t") = 0
17372 fsync(5</d>) = 0
`
	padded := `781   fsync(5</d/.t.tmp-1> <unfinished ...>
784   --- SIGURG {si_signo=SIGURG, si_code=SI_TKILL, si_pid=781, si_uid=0} ---
781   <... fsync resumed>)              = 0
781   renameat(AT_FDCWD</w>, "/d/.t.tmp-1", AT_FDCWD</w>, "/d/t") = 0
781   fsync(5</d>) = 0
`
	unsynced := `17372 renameat(AT_FDCWD</w>, "/d/.t.tmp-1", AT_FDCWD</w>, "/d/t") = 0
17372 fsync(5</d>) = 0
`
	noDirSync := `17372 fsync(5</d/.t.tmp-1>) = 0
17372 renameat(AT_FDCWD</w>, "/d/.t.tmp-1", AT_FDCWD</w>, "/d/t") = 0
`
	for _, tt := range []struct{ name, log, want string }{
		{"interrupted fsync", interrupted, ""},
		{"interrupted fsync, padded PIDs", padded, ""},
		{"no fsync of the file", unsynced, "renamed over it without an fsync of /d/.t.tmp-1"},
		{"no fsync of the directory", noDirSync, "no fsync of its directory after the rename"},
	} {
		if got := durableWrite(tt.log, dir+"/t"); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
