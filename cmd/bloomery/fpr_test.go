package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/bloomery/bloom/server"
	"github.com/redis/go-redis/v9"
)

// fprReport is the parsed report of fpr.
type fprReport struct {
	falsePositives   uint64
	observed, lo, hi float64
	lines            map[string]string // by label
}

var (
	fprRowRE      = regexp.MustCompile(`^(filter|inserted|probed|false positives|observed rate|target rate|model rate|verdict) {3,}(.+)$`)
	fprObservedRE = regexp.MustCompile(`^(\S+) \(99% CI (\S+) … (\S+), Wilson\)$`)
)

// parseFprReport parses fpr's standard output, failing the test on any
// line it does not expect.
func parseFprReport(t *testing.T, out string) fprReport {
	t.Helper()
	r := fprReport{lines: map[string]string{}}
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		m := fprRowRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected report line %q in:\n%s", line, out)
		}
		r.lines[m[1]] = m[2]
	}
	var err error
	if r.falsePositives, err = strconv.ParseUint(r.lines["false positives"], 10, 64); err != nil {
		t.Fatalf("false positives: %v\n%s", err, out)
	}
	m := fprObservedRE.FindStringSubmatch(r.lines["observed rate"])
	if m == nil {
		t.Fatalf("observed rate line %q\n%s", r.lines["observed rate"], out)
	}
	for i, dst := range []*float64{&r.observed, &r.lo, &r.hi} {
		if *dst, err = strconv.ParseFloat(m[i+1], 64); err != nil {
			t.Fatalf("observed rate: %v\n%s", err, out)
		}
	}
	return r
}

// runFprOK runs fpr with args, expects success, and checks the report's
// arithmetic: n items, probes never-inserted items, the observed rate
// inside its interval and the target not below it.
func runFprOK(t *testing.T, n, probes uint64, p float64, args ...string) fprReport {
	t.Helper()
	args = append([]string{"fpr", "-n", strconv.FormatUint(n, 10), "--probes", strconv.FormatUint(probes, 10),
		"-p", strconv.FormatFloat(p, 'g', -1, 64)}, args...)
	code, stdout, stderr := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("%v: exit code %d\nstderr:\n%s", args, code, stderr)
	}
	r := parseFprReport(t, stdout)
	if got := float64(r.falsePositives) / float64(probes); formatRate(got) != formatRate(r.observed) {
		t.Errorf("observed rate %g, want %d/%d = %g", r.observed, r.falsePositives, probes, got)
	}
	if !(r.lo <= r.observed && r.observed <= r.hi) {
		t.Errorf("observed rate %g outside its interval [%g, %g]", r.observed, r.lo, r.hi)
	}
	// The filter keeps its promise: P is not below the 99% interval.
	if r.lo > p {
		t.Errorf("rate above target: interval [%g, %g], p = %g\n%s", r.lo, r.hi, p, stdout)
	}
	if !strings.HasPrefix(r.lines["inserted"], strconv.FormatUint(n, 10)+" items: ") ||
		!strings.HasPrefix(r.lines["probed"], strconv.FormatUint(probes, 10)+" never-inserted items: ") {
		t.Errorf("item counts wrong:\n%s", stdout)
	}
	if r.lines["target rate"] != formatRate(p) {
		t.Errorf("target rate %q, want %s", r.lines["target rate"], formatRate(p))
	}
	for _, want := range []string{
		"fpr: inserted " + strconv.FormatUint(n, 10) + " items in ",
		"fpr: probed " + strconv.FormatUint(probes, 10) + " items in ",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	return r
}

func TestFprMemory(t *testing.T) {
	tests := []struct {
		n, probes uint64
		p         float64
		args      []string
		inserted  string // the inserted row
		probed    string // the probed row
	}{
		{100_000, 50_000, 0.01, nil,
			"100000 items: user:0 … user:99999", "50000 never-inserted items: user:100000 … user:149999"},
		{20_000, 100_000, 0.001, []string{"--layout", "classic", "--keys", "https://example.com/item/%d?x=1"},
			"20000 items: https://example.com/item/0?x=1 … https://example.com/item/19999?x=1", ""},
		{50_000, 50_000, 0.05, []string{"--keys", "%x", "--seed", "7"}, "", ""},
		{1, 1000, 0.5, []string{"--keys", "100%% %d"}, "1 items: 100% 0", "1000 never-inserted items: 100% 1 … 100% 1000"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runFprOK(t, tt.n, tt.probes, tt.p, tt.args...)
			if tt.inserted != "" && r.lines["inserted"] != tt.inserted {
				t.Errorf("inserted = %q, want %q", r.lines["inserted"], tt.inserted)
			}
			if tt.probed != "" && r.lines["probed"] != tt.probed {
				t.Errorf("probed = %q, want %q", r.lines["probed"], tt.probed)
			}
			if !strings.HasPrefix(r.lines["filter"], "memory: ") || r.lines["model rate"] == "" {
				t.Errorf("filter %q, model rate %q", r.lines["filter"], r.lines["model rate"])
			}
			if r.falsePositives == 0 && tt.p >= 0.01 {
				t.Errorf("no false positives at p = %g: are the probes really tested?", tt.p)
			}
		})
	}
}

// TestFprDeterministic: the same run twice gives the same count, and
// another seed of %x keys gives other items.
func TestFprDeterministic(t *testing.T) {
	a := runFprOK(t, 30_000, 30_000, 0.02, "--keys", "k%x", "--seed", "1")
	b := runFprOK(t, 30_000, 30_000, 0.02, "--keys", "k%x", "--seed", "1")
	c := runFprOK(t, 30_000, 30_000, 0.02, "--keys", "k%x", "--seed", "2")
	if a.falsePositives != b.falsePositives || a.lines["inserted"] != b.lines["inserted"] {
		t.Errorf("two identical runs differ: %d vs %d false positives", a.falsePositives, b.falsePositives)
	}
	if a.lines["inserted"] == c.lines["inserted"] {
		t.Errorf("--seed 2 gave the same items: %s", c.lines["inserted"])
	}
}

func TestFprBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"--probes", "10"}, "-n/--items is required"},
		{[]string{"-n", "0"}, `invalid argument "0" for "-n, --items"`},
		{[]string{"-n", "10", "--probes", "x"}, `for "--probes"`},
		{[]string{"-n", "10", "-p", "2"}, `for "-p, --rate"`},
		{[]string{"-n", "10", "--layout", "all"}, "--layout all"},
		{[]string{"-n", "10", "--keys", "user"}, `invalid --keys "user": no %d or %x`},
		{[]string{"-n", "10", "--keys", "%d-%x"}, "more than one"},
		{[]string{"-n", "10", "--keys", "%s"}, "%s: only"},
		{[]string{"-n", "10", "--keys", "a%"}, "at the end"},
		{[]string{"-n", "10", "--target", "mem"}, `invalid --target "mem"`},
		{[]string{"-n", "10", "--target", "http://x:1/0"}, `scheme "http"`},
		{[]string{"-n", "10", "--target", "redis:///0"}, "no host"},
		{[]string{"-n", "10", "--target", "redis://h:1/zero"}, `invalid --target`},
		{[]string{"-n", "10", "--target", "redis://u:secret@h:1/x"}, `redis://u:xxxxx@h:1/x`},
		{[]string{"-n", "10", "--target", "bloomery://h:1/k?a=b"}, "no query options"},
		{[]string{"-n", "1e19", "--probes", "1e19"}, "overflows"},
		{[]string{"-n", "10", "stray"}, `unexpected argument "stray"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"fpr"}, tt.args...)...)
			if code != exitUsage || stdout != "" {
				t.Errorf("exit code %d, stdout %q; want %d and none", code, stdout, exitUsage)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			if strings.Contains(stderr, "secret") {
				t.Errorf("stderr shows the password:\n%s", stderr)
			}
		})
	}
}

func TestParseFprKeys(t *testing.T) {
	tests := []struct {
		pattern string
		items   []string // items 0, 1 and 12
	}{
		{"user:%d", []string{"user:0", "user:1", "user:12"}},
		{"%d", []string{"0", "1", "12"}},
		{"a%%b%dc%%", []string{"a%b0c%", "a%b1c%", "a%b12c%"}},
		{"%d0", []string{"00", "10", "120"}},
	}
	for _, tt := range tests {
		k, err := parseFprKeys(tt.pattern, 1)
		if err != nil {
			t.Errorf("%q: %v", tt.pattern, err)
			continue
		}
		for i, want := range tt.items {
			if got := string(k.appendItem(nil, []uint64{0, 1, 12}[i])); got != want {
				t.Errorf("%q item %d = %q, want %q", tt.pattern, i, got, want)
			}
		}
	}

	// Scrambled items are distinct (scramble is a bijection).
	k, err := parseFprKeys("x%x", 3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range uint64(200_000) {
		s := string(k.appendItem(nil, i))
		if seen[s] {
			t.Fatalf("item %d = %q repeats", i, s)
		}
		seen[s] = true
	}
}

func TestWilson(t *testing.T) {
	z2 := confidenceZ * confidenceZ
	tests := []struct {
		k, n   uint64
		lo, hi float64
	}{
		{0, 100, 0, z2 / (100 + z2)}, // closed form at k = 0
		{100, 100, 100 / (100 + z2), 1},
		{10, 100, 0.046025811701035, 0.203750738471623},
		{441, 50000, 0.007806204644978, 0.009964135199694},
		{0, 0, 0, 1},
	}
	for _, tt := range tests {
		lo, hi := wilson(tt.k, tt.n)
		if math.Abs(lo-tt.lo) > 1e-12 || math.Abs(hi-tt.hi) > 1e-12 {
			t.Errorf("wilson(%d, %d) = [%.15f, %.15f], want [%.15f, %.15f]", tt.k, tt.n, lo, hi, tt.lo, tt.hi)
		}
	}
	// Symmetry: the interval of k failures mirrors that of k successes.
	lo, hi := wilson(30, 1000)
	lo2, hi2 := wilson(970, 1000)
	if math.Abs(lo-(1-hi2)) > 1e-12 || math.Abs(hi-(1-lo2)) > 1e-12 {
		t.Errorf("wilson(30, 1000) = [%g, %g] does not mirror wilson(970, 1000) = [%g, %g]", lo, hi, lo2, hi2)
	}
	for _, tt := range []struct {
		lo, hi float64
		want   string
	}{
		{0.02, 0.03, "ABOVE the target"},
		{0.001, 0.005, "below the target"},
		{0.005, 0.02, "consistent with the target"},
	} {
		if got := fprVerdict(0.01, tt.lo, tt.hi); !strings.HasPrefix(got, tt.want) {
			t.Errorf("verdict for [%g, %g] at 0.01 = %q, want %q…", tt.lo, tt.hi, got, tt.want)
		}
	}
}

// dbSize is the number of keys in the Redis (or bloomery server) at addr.
func dbSize(t *testing.T, addr string) int64 {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	n, err := c.DBSize(context.Background()).Result()
	if err != nil {
		t.Fatalf("DBSIZE at %s: %v", addr, err)
	}
	return n
}

// TestFprRedis runs fpr on a real redis-server: the same answers as in
// memory (redisfilter keeps the library's bits), and nothing left behind.
func TestFprRedis(t *testing.T) {
	srv := redistest.Start(t)
	target := "redis://" + srv.Addr() + "/0"
	mem := runFprOK(t, 50_000, 20_000, 0.01)
	r := runFprOK(t, 50_000, 20_000, 0.01, "--target", target)
	if r.falsePositives != mem.falsePositives {
		t.Errorf("Redis: %d false positives, memory %d: the same filter should answer the same",
			r.falsePositives, mem.falsePositives)
	}
	if !strings.HasPrefix(r.lines["filter"], target+` key "bloomery-fpr:`) {
		t.Errorf("filter row %q", r.lines["filter"])
	}
	if n := dbSize(t, srv.Addr()); n != 0 {
		t.Errorf("%d keys left in Redis after fpr", n)
	}
	checkFprRefusesExisting(t, srv.Addr(), target+"/taken",
		[]any{"SET", "taken", "precious"}, []any{"GET", "taken"}, "precious")
}

// checkFprRefusesExisting: fpr on a key that exists fails (exit 1) and
// leaves the key alone. The key "taken" is made with the command create
// and checked with check, which must then answer want.
func checkFprRefusesExisting(t *testing.T, addr, target string, create, check []any, want any) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.Do(ctx, create...).Err(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "fpr", "-n", "100", "--target", target)
	if code != exitError || stdout != "" || !strings.Contains(stderr, `key "taken"`) {
		t.Errorf("fpr on an existing key: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if v, err := c.Do(ctx, check...).Result(); v != want {
		t.Errorf("existing key now answers %v (%v), want %v", v, err, want)
	}
}

// startBloomery runs a bloomery server (memory backend, nothing on disk)
// in this process and returns its address; it stops when the test ends.
func startBloomery(t *testing.T) string {
	t.Helper()
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Dir: "-",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestFprServer runs fpr through BF.* on an in-process bloomery server.
func TestFprServer(t *testing.T) {
	addr := startBloomery(t)
	target := "bloomery://" + addr
	r := runFprOK(t, 50_000, 20_000, 0.01, "--target", target)
	if !strings.HasPrefix(r.lines["filter"], target+` key "bloomery-fpr:`) ||
		!strings.Contains(r.lines["filter"], "BF.RESERVE 0.01 50000") {
		t.Errorf("filter row %q", r.lines["filter"])
	}
	if _, ok := r.lines["model rate"]; ok {
		t.Errorf("a model rate for a server filter, whose geometry fpr does not know")
	}
	if n := dbSize(t, addr); n != 0 {
		t.Errorf("%d keys left on the server after fpr", n)
	}
	checkFprRefusesExisting(t, addr, target+"/taken",
		[]any{"BF.ADD", "taken", "x"}, []any{"BF.CARD", "taken"}, int64(1))

	// A server that is not there: exit 1, naming it.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	gone := ln.Addr().String()
	ln.Close()
	code, _, stderr := runCLI(t, "fpr", "-n", "100", "--target", "bloomery://"+gone)
	if code != exitError || !strings.Contains(stderr, gone) {
		t.Errorf("fpr on a closed port: exit %d, stderr:\n%s", code, stderr)
	}
}
