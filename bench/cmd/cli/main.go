// Command cli benchmarks the bloomery command line against DCSO's bloom
// (Debian's golang-github-dcso-bloom-cli, binary /usr/bin/bloom) on the
// same input, in one interleaved run.
//
// It writes two files of -n lines each to a temporary directory: the
// input, URLs with a few shared prefixes and sequential IDs (the keys
// weak hashes get wrong), and the probes, alternately a line of the input
// (even IDs) and a line that was never inserted (IDs from n up). Then,
// for each of -rounds rounds, alternating which tool goes first:
//
//	build: bloom create -n N -p P d.bloom && bloom insert d.bloom < input
//	       bloomery build -n N -p P -o b.bloom < input
//	check: bloom check d.bloom < probes > out
//	       bloomery check b.bloom < probes > out
//
// Both read standard input from the same file in the page cache and write
// to a file. For each step it reports the median wall time over the
// rounds, lines per second, the median of the per-round ratios (DCSO's
// time over ours), the peak resident set and the CPU time (from wait4's
// rusage); then each tool's filter file size and its observed
// false-positive rate on the never-inserted half of the probes, with a
// 99% Wilson interval, and checks that neither missed an inserted line.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bloomery/bloom/bench"
)

func main() {
	n := flag.Int("n", 10_000_000, "lines of input, and of probes (half present, half absent)")
	p := flag.Float64("p", 0.01, "false-positive rate for both tools")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	dcso := flag.String("dcso", "bloom", "DCSO's bloom binary")
	bin := flag.String("bloomery", "", "bloomery binary (default: go build ./cmd/bloomery at the repository root)")
	dir := flag.String("dir", "", "work directory (default: a temporary one, removed at the end)")
	flag.Parse()
	if err := run(*n, *p, *rounds, *dcso, *bin, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "cli:", err)
		os.Exit(1)
	}
}

// tool is one command line under test.
type tool struct {
	name  string
	build []step // run in order; their times add up
	check step
	file  string // the filter file build writes
}

// step is one process: its arguments and standard input.
type step struct {
	args  []string
	stdin string // file; "" for none
}

// sample is what one run of a step cost.
type sample struct {
	wall, cpu time.Duration
	maxRSS    int64 // bytes
}

func run(n int, p float64, rounds int, dcso, bin, dir string) error {
	if n < 2 || rounds < 1 {
		return fmt.Errorf("-n must be at least 2 and -rounds at least 1")
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "bench-cli-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	dcsoPath, err := exec.LookPath(dcso)
	if err != nil {
		return fmt.Errorf("%s not found (apt-get install golang-github-dcso-bloom-cli): %w", dcso, err)
	}
	if bin == "" {
		if bin, err = bench.BuildBloomery(dir); err != nil {
			return err
		}
	}
	input, probes := filepath.Join(dir, "input.txt"), filepath.Join(dir, "probes.txt")
	start := time.Now()
	if err := writeInputs(input, probes, n); err != nil {
		return err
	}
	logf("wrote %d input and %d probe lines in %v; this process's peak RSS: %s (the floor of every peak RSS below)",
		n, n, time.Since(start).Round(time.Millisecond), humanBytes(selfPeakRSS()))
	for _, f := range []string{input, probes} { // into the page cache
		if err := readAll(f); err != nil {
			return err
		}
	}

	ns, ps := strconv.Itoa(n), strconv.FormatFloat(p, 'g', -1, 64)
	ours := tool{name: "bloomery", file: filepath.Join(dir, "b.bloom")}
	ours.build = []step{{args: []string{bin, "build", "-n", ns, "-p", ps, "-o", ours.file}, stdin: input}}
	ours.check = step{args: []string{bin, "check", ours.file}, stdin: probes}
	theirs := tool{name: "DCSO bloom", file: filepath.Join(dir, "d.bloom")}
	theirs.build = []step{
		{args: []string{dcsoPath, "create", "-n", ns, "-p", ps, theirs.file}},
		{args: []string{dcsoPath, "insert", theirs.file}, stdin: input},
	}
	theirs.check = step{args: []string{dcsoPath, "check", theirs.file}, stdin: probes}
	tools := []*tool{&theirs, &ours}

	out := filepath.Join(dir, "out.txt")
	builds := map[*tool][]sample{}
	checks := map[*tool][]sample{}
	fps := map[*tool]uint64{}
	for r := range rounds {
		order := tools
		if r%2 == 1 {
			order = []*tool{&ours, &theirs}
		}
		for _, t := range order {
			os.Remove(t.file)
			var total sample
			for _, s := range t.build {
				got, err := runStep(s, os.DevNull)
				if err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				total = sample{total.wall + got.wall, total.cpu + got.cpu, max(total.maxRSS, got.maxRSS)}
			}
			builds[t] = append(builds[t], total)
			logf("round %d: %s build %v", r+1, t.name, total.wall.Round(time.Millisecond))
		}
		for _, t := range order {
			got, err := runStep(t.check, out)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			checks[t] = append(checks[t], got)
			fp, err := countMatches(out, n)
			if err != nil {
				return fmt.Errorf("%s check: %w", t.name, err)
			}
			fps[t] = fp
			logf("round %d: %s check %v, %d false positives", r+1, t.name, got.wall.Round(time.Millisecond), fp)
		}
	}

	fmt.Printf("Input: %d lines (%s), probes: %d lines (%d present, %d absent); p = %s; %d interleaved rounds.\n\n",
		n, humanBytes(fileSize(input)), n, (n+1)/2, n/2, ps, rounds)
	fmt.Println("Commands (stdin from the files above, stdout to a file):")
	fmt.Println()
	for _, t := range tools {
		for _, s := range append(slices.Clone(t.build), t.check) {
			cmdline := strings.Join(append([]string{filepath.Base(s.args[0])}, s.args[1:]...), " ")
			fmt.Printf("    %s%s\n", strings.ReplaceAll(cmdline, dir+string(filepath.Separator), ""), redirect(s.stdin))
		}
	}
	fmt.Println()
	fmt.Println("| step | tool | median wall | lines/s | DCSO ÷ bloomery (median of rounds) | peak RSS | CPU (user+sys) |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|")
	for _, st := range []struct {
		name string
		runs map[*tool][]sample
	}{{"build", builds}, {"check", checks}} {
		ratio := medianRatio(st.runs[&theirs], st.runs[&ours])
		for _, t := range tools {
			m := median(st.runs[t])
			r := ""
			if t == &ours {
				r = fmt.Sprintf("%.2f×", ratio)
			}
			fmt.Printf("| %s | %s | %v | %s | %s | %s | %v |\n", st.name, t.name, m.wall.Round(time.Millisecond),
				shortCount(float64(n)/m.wall.Seconds()), r, humanBytes(m.maxRSS), m.cpu.Round(time.Millisecond))
		}
	}
	fmt.Println()
	fmt.Println("| tool | filter file | false positives | observed rate (99% Wilson interval) |")
	fmt.Println("|---|---:|---:|---|")
	for _, t := range tools {
		lo, hi := wilson(fps[t], uint64(n/2))
		fmt.Printf("| %s | %s | %d of %d | %.3e (%.3e … %.3e) |\n", t.name, humanBytes(fileSize(t.file)), fps[t], n/2,
			float64(fps[t])/float64(n/2), lo, hi)
	}
	return nil
}

// hosts are the URL prefixes of the generated lines.
var hosts = []string{
	"https://www.example.com/catalog/item/",
	"https://shop.example.org/products/",
	"http://cdn.example.net/static/img/",
	"https://api.example.io/v2/users/",
}

// line appends the line of ID id: a URL with a shared prefix and the ID
// in decimal.
func line(dst []byte, id int) []byte {
	dst = append(dst, hosts[id%len(hosts)]...)
	dst = strconv.AppendInt(dst, int64(id), 10)
	return append(dst, "?ref=feed\n"...)
}

// lineID parses the ID back out of a line (without its newline).
func lineID(b []byte) (int, bool) {
	q := bytes.LastIndexByte(b, '?')
	s := bytes.LastIndexByte(b, '/')
	if q < 0 || s < 0 || s > q {
		return 0, false
	}
	id, err := strconv.Atoi(string(b[s+1 : q]))
	return id, err == nil
}

// writeInputs writes the input (IDs 0 … n-1) and the probes: even IDs of
// the input alternating with IDs n, n+1, … that were never inserted. It
// streams them: this process must stay small, because on Linux a child's
// peak RSS (ru_maxrss) starts from its parent's at the fork.
func writeInputs(input, probes string, n int) error {
	return errors.Join(
		writeLines(input, n, func(i int) int { return i }),
		writeLines(probes, n, func(i int) int {
			if i%2 == 0 {
				return i
			}
			return n + i/2
		}))
}

// writeLines writes the lines of IDs id(0) … id(n-1) to path.
func writeLines(path string, n int, id func(i int) int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	for i := range n {
		buf = line(buf[:0], id(i))
		w.Write(buf)
	}
	return errors.Join(w.Flush(), f.Close())
}

// countMatches reads a check's output and returns how many lines are
// never-inserted IDs (≥ n); it fails if an inserted probe is missing.
func countMatches(path string, n int) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(bufio.NewReaderSize(f, 1<<20))
	var fp, present uint64
	for sc.Scan() {
		id, ok := lineID(sc.Bytes())
		switch {
		case !ok:
			return 0, fmt.Errorf("unexpected output line %q", sc.Text())
		case id >= n:
			fp++
		default:
			present++
		}
	}
	if want := uint64((n + 1) / 2); present != want {
		return 0, fmt.Errorf("%d inserted probes reported, want %d (a false negative?)", present, want)
	}
	return fp, sc.Err()
}

// runStep runs s with standard output to out and returns its cost.
func runStep(s step, out string) (sample, error) {
	cmd := exec.Command(s.args[0], s.args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if s.stdin != "" {
		in, err := os.Open(s.stdin)
		if err != nil {
			return sample{}, err
		}
		defer in.Close()
		cmd.Stdin = in
	}
	o, err := os.Create(out)
	if err != nil {
		return sample{}, err
	}
	defer o.Close()
	cmd.Stdout = o
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %v\n%s", strings.Join(s.args, " "), err, stderr.Bytes())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return sample{wall: wall, cpu: cpu, maxRSS: ru.Maxrss * 1024}, nil // Linux: Maxrss in KiB
}

func redirect(stdin string) string {
	switch filepath.Base(stdin) {
	case "input.txt":
		return " < input.txt"
	case "probes.txt":
		return " < probes.txt > out.txt"
	}
	return ""
}

// median is the sample of median wall time (and its own CPU and RSS).
func median(s []sample) sample {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b sample) int { return int(a.wall - b.wall) })
	return s[len(s)/2]
}

// medianRatio is the median over rounds of a[i].wall / b[i].wall.
func medianRatio(a, b []sample) float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = a[i].wall.Seconds() / b[i].wall.Seconds()
	}
	slices.Sort(r)
	return r[len(r)/2]
}

// wilson is the 99% Wilson score interval of k successes in n trials.
func wilson(k, n uint64) (lo, hi float64) {
	const z = 2.5758293035489004
	nf, ph := float64(n), float64(k)/float64(n)
	c := (ph + z*z/(2*nf)) / (1 + z*z/nf)
	h := z / (1 + z*z/nf) * math.Sqrt(ph*(1-ph)/nf+z*z/(4*nf*nf))
	return max(0, c-h), min(1, c+h)
}

// selfPeakRSS is this process's peak resident set (VmHWM), or -1.
func selfPeakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return -1
}

func readAll(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func humanBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

func shortCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cli: "+format+"\n", args...)
}
