package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/redistest"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// testFilter is a filter of n items "item:0" … at rate p, in layout l.
func testFilter(t *testing.T, n uint64, p float64, l bloom.Layout) *bloom.Filter {
	t.Helper()
	f, err := bloom.New(n, p, bloom.WithLayout(l))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f.AddString(fmt.Sprintf("item:%d", i))
	}
	return f
}

// payload is the bit array of a kind-1 file (after the 64-byte header).
func payload(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 72 {
		t.Fatalf("%s: %d bytes", path, len(b))
	}
	return b[64:]
}

// sameAnswers checks that the filter file at path answers like want for
// the items "item:0" … "item:2n-1" (half of them absent from want).
func sameAnswers(t *testing.T, path string, want *bloom.Filter, n uint64) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	got, err := bloom.Load(file)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got.Sizing() != want.Sizing() {
		t.Errorf("%s: sizing %v, want %v", path, got.Sizing(), want.Sizing())
	}
	for i := range 2 * n {
		item := fmt.Sprintf("item:%d", i)
		if got.TestString(item) != want.TestString(item) {
			t.Fatalf("%s: Test(%q) = %v, the original answers %v", path, item, got.TestString(item), want.TestString(item))
		}
	}
}

// runCLIOK runs a command line that must succeed silently.
func runCLIOK(t *testing.T, args ...string) {
	t.Helper()
	if code, stdout, stderr := runCLI(t, args...); code != exitOK || stdout != "" || stderr != "" {
		t.Fatalf("%v: exit code %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
	}
}

// runCLIFails runs a command line that must fail with code and a
// message on stderr containing each of want.
func runCLIFails(t *testing.T, code int, want []string, args ...string) {
	t.Helper()
	got, stdout, stderr := runCLI(t, args...)
	if got != code || stdout != "" {
		t.Errorf("%v: exit code %d, stdout %q; want %d and none\nstderr:\n%s", args, got, stdout, code, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%v: stderr lacks %q:\n%s", args, w, stderr)
		}
	}
}

// TestPushPullRedis: a filter file pushed to a real redis-server and
// pulled back has the same bits and answers, and redisfilter readers see
// it.
func TestPushPullRedis(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	ctx := context.Background()
	dir := t.TempDir()
	for _, l := range []bloom.Layout{bloom.Blocked, bloom.Classic} {
		t.Run(l.String(), func(t *testing.T) {
			const n = 20_000
			f := testFilter(t, n, 0.01, l)
			src := writeFilterFile(t, l.String()+".bloom", f)
			url := fmt.Sprintf("redis://%s/3/filters/%s", srv.Addr(), l)
			runCLIOK(t, "push", src, url)

			// Database 3, key "filters/<layout>": redisfilter sees the filter.
			c3 := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: 3})
			defer c3.Close()
			rf, err := redisfilter.Open(ctx, c3, "filters/"+l.String())
			if err != nil {
				t.Fatal(err)
			}
			if rf.Sizing() != f.Sizing() {
				t.Errorf("Redis filter %v, file %v", rf.Sizing(), f.Sizing())
			}
			for _, i := range []int{0, 1, n - 1} {
				if ok, err := rf.Exists(ctx, fmt.Appendf(nil, "item:%d", i)); !ok || err != nil {
					t.Errorf("Exists(item:%d) = %v, %v after push", i, ok, err)
				}
			}

			dst := filepath.Join(dir, l.String()+".pulled")
			runCLIOK(t, "pull", url, dst)
			if !bytes.Equal(payload(t, dst), payload(t, src)) {
				t.Errorf("pulled payload differs from the pushed one")
			}
			sameAnswers(t, dst, f, n)
		})
	}
	if n, _ := client.DBSize(ctx).Result(); n != 0 {
		t.Errorf("%d keys in database 0, want none (the URLs named database 3)", n)
	}
}

// TestPushForce: push refuses an existing key without --force; with it,
// a filter of the same geometry is replaced atomically, one of another
// geometry by delete and create, and a key that is no filter never.
func TestPushForce(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	ctx := context.Background()
	dir := t.TempDir()
	url := "redis://" + srv.Addr() + "/0/f"

	a := testFilter(t, 1000, 0.01, bloom.Blocked)
	b, _ := bloom.New(1000, 0.01) // same geometry, other items
	b.AddString("only-in-b")
	c := testFilter(t, 5000, 0.001, bloom.Classic) // another geometry
	pathA, pathB, pathC := writeFilterFile(t, "a", a), writeFilterFile(t, "b", b), writeFilterFile(t, "c", c)

	runCLIOK(t, "push", pathA, url)
	runCLIFails(t, exitError, []string{`key "f" exists`, "--force"}, "push", pathB, url)
	pulled := filepath.Join(dir, "pulled")
	runCLIOK(t, "pull", url, pulled)
	sameAnswers(t, pulled, a, 1000)

	runCLIOK(t, "push", "--force", pathB, url) // same geometry: rotation
	rf, err := redisfilter.Open(ctx, client, "f")
	if err != nil {
		t.Fatal(err)
	}
	if g := rf.Meta().Generation; g != 2 {
		t.Errorf("generation %d after push --force of the same geometry, want 2 (a rotation)", g)
	}
	runCLIOK(t, "pull", "-f", url, pulled)
	if !bytes.Equal(payload(t, pulled), payload(t, pathB)) {
		t.Errorf("after push --force, the pulled filter is not the new one")
	}

	runCLIOK(t, "push", "-f", pathC, url) // another geometry
	runCLIOK(t, "pull", "--force", url, pulled)
	sameAnswers(t, pulled, c, 5000)

	// A Redis scalable filter at the key is replaced too.
	if _, err := redisfilter.CreateScalable(ctx, client, "s", 100, 0.01); err != nil {
		t.Fatal(err)
	}
	sURL := "redis://" + srv.Addr() + "/0/s"
	runCLIFails(t, exitError, []string{"exists"}, "push", pathA, sURL)
	runCLIOK(t, "push", "--force", pathA, sURL)
	runCLIOK(t, "pull", "-f", sURL, pulled)
	sameAnswers(t, pulled, a, 1000)

	// Anything else is left alone, even with --force.
	client.Set(ctx, "plain", "precious", 0)
	runCLIFails(t, exitError, []string{"not a filter; not replaced"}, "push", "--force", pathA, "redis://"+srv.Addr()+"/0/plain")
	if v, _ := client.Get(ctx, "plain").Result(); v != "precious" {
		t.Errorf("push --force changed a plain key to %q", v)
	}
}

// TestPushPullServer: a scalable filter file pushed to a bloomery server
// with BF.LOADCHUNK and pulled with BF.SCANDUMP comes back byte for byte.
func TestPushPullServer(t *testing.T) {
	addr := startBloomery(t)
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	ctx := context.Background()
	dir := t.TempDir()

	s, err := bloom.NewScalable(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 { // several sub-filters
		s.AddString(fmt.Sprintf("item:%d", i))
	}
	src := writeFilterFile(t, "s.bloom", s)
	url := "bloomery://" + addr + "/seen"
	runCLIOK(t, "push", src, url)
	found, err := client.BFMExists(ctx, "seen", "item:0", "item:4999").Result()
	if err != nil || !found[0] || !found[1] {
		t.Errorf("BF.MEXISTS after push = %v, %v", found, err)
	}
	if card, _ := client.BFCard(ctx, "seen").Result(); card != int64(s.Count()) {
		t.Errorf("BF.CARD = %d, want %d", card, s.Count())
	}

	dst := filepath.Join(dir, "pulled.bloom")
	runCLIOK(t, "pull", url, dst)
	want, _ := os.ReadFile(src)
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, want) {
		t.Errorf("pulled file (%d bytes) differs from the pushed one (%d bytes)", len(got), len(want))
	}

	// A filter made on the server, pulled to a file, answers as BF.EXISTS.
	client.BFMAdd(ctx, "made", "x", "y")
	runCLIOK(t, "pull", "bloomery://"+addr+"/made", filepath.Join(dir, "made.bloom"))
	file, _ := os.Open(filepath.Join(dir, "made.bloom"))
	defer file.Close()
	made, err := bloom.LoadScalable(file)
	if err != nil || !made.TestString("x") || !made.TestString("y") || made.Count() != 2 {
		t.Errorf("pulled server filter: %v, Test(x) %v, count %d", err, err == nil && made.TestString("x"), made.Count())
	}

	runCLIFails(t, exitError, []string{`key "seen" exists`, "--force"}, "push", src, url)
	client.BFAdd(ctx, "seen", "extra")
	runCLIOK(t, "push", "--force", src, url)
	if ok, _ := client.BFExists(ctx, "seen", "extra").Result(); ok {
		t.Errorf("push --force kept an item of the replaced filter")
	}
	runCLIFails(t, exitError, []string{`no filter at bloomery://` + addr + ` key "nope"`}, "pull", "bloomery://"+addr+"/nope", filepath.Join(dir, "x"))
}

// TestPushPullErrors: bad arguments are usage errors naming them; bad
// files, missing keys and unreachable servers fail with exit status 1 and
// leave no file or key behind.
func TestPushPullErrors(t *testing.T) {
	srv := redistest.Start(t)
	server := startBloomery(t)
	dir := t.TempDir()
	redisURL := "redis://" + srv.Addr() + "/0/k"
	serverURL := "bloomery://" + server + "/k"

	f := testFilter(t, 1000, 0.01, bloom.Blocked)
	good := writeFilterFile(t, "good.bloom", f)
	scal, _ := bloom.NewScalable(100, 0.01)
	scalable := writeFilterFile(t, "scalable.bloom", scal)
	cnt, _ := bloom.NewCounting(100, 0.01)
	counting := writeFilterFile(t, "counting.bloom", cnt)
	keyed, _ := bloom.New(100, 0.01, bloom.WithKey([16]byte{1}))
	keyedPath := writeFilterFile(t, "keyed.bloom", keyed)

	raw, _ := os.ReadFile(good)
	corrupted := corrupt(t, writeFilterFile(t, "corrupt.bloom", f))
	truncated := truncate(t, writeFilterFile(t, "truncated.bloom", f), len(raw)/2)
	text := writeTemp(t, "text.txt", "hello\n")

	tests := []struct {
		code int
		want []string
		args []string
	}{
		{exitUsage, []string{"takes FILTER and a destination URL"}, []string{"push", good}},
		{exitUsage, []string{"takes a source URL and FILTER"}, []string{"pull", redisURL}},
		{exitUsage, []string{`invalid destination "http://x/0/k"`, `scheme "http"`}, []string{"push", good, "http://x/0/k"}},
		{exitUsage, []string{`invalid destination "redis://127.0.0.1:1/0"`, "no key name"}, []string{"push", good, "redis://127.0.0.1:1/0"}},
		{exitUsage, []string{`invalid source "bloomery://h:1"`, "no key name"}, []string{"pull", "bloomery://h:1", "x"}},
		{exitUsage, []string{`invalid source "redis://h:1/db/k"`}, []string{"pull", "redis://h:1/db/k", "x"}},
		{exitUsage, []string{`invalid source "k"`, "no host"}, []string{"pull", "k", "x"}},
		{exitUsage, []string{"unknown flag: --frobnicate"}, []string{"push", "--frobnicate", good, redisURL}},

		{exitError, []string{"missing.bloom", "no such file"}, []string{"push", filepath.Join(dir, "missing.bloom"), redisURL}},
		{exitError, []string{"text.txt: bloom: malformed filter encoding: bad magic"}, []string{"push", text, redisURL}},
		{exitError, []string{"corrupt.bloom", "checksum"}, []string{"push", corrupted, redisURL}},
		{exitError, []string{"truncated.bloom"}, []string{"push", truncated, redisURL}},
		{exitError, []string{"is a scalable filter (kind 2)", "bloomery://"}, []string{"push", scalable, redisURL}},
		{exitError, []string{"is a fixed-size filter (kind 1)", "redis://"}, []string{"push", good, serverURL}},
		{exitError, []string{"is a counting filter (kind 3)"}, []string{"push", counting, redisURL}},
		{exitError, []string{"is a counting filter (kind 3)"}, []string{"push", counting, serverURL}},
		{exitError, []string{"keyed.bloom is keyed"}, []string{"push", keyedPath, redisURL}},
		{exitError, []string{`no filter at redis://` + srv.Addr() + `/0 key "k"`}, []string{"pull", redisURL, filepath.Join(dir, "out")}},
		{exitError, []string{"good.bloom exists", "--force"}, []string{"pull", redisURL, good}},
		{exitError, []string{"127.0.0.1:1", "connection refused"}, []string{"push", good, "redis://127.0.0.1:1/0/k"}},
		{exitError, []string{"127.0.0.1:1", "connection refused"}, []string{"pull", "bloomery://127.0.0.1:1/k", filepath.Join(dir, "out")}},
	}
	for _, tt := range tests {
		name := slices.Clone(tt.args)
		for i, a := range name {
			if filepath.IsAbs(a) {
				name[i] = filepath.Base(a)
			}
		}
		t.Run(strings.Join(name, " "), func(t *testing.T) {
			runCLIFails(t, tt.code, tt.want, tt.args...)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Errorf("a failed pull left its output file")
	}
	if got, _ := os.ReadFile(good); !bytes.Equal(got, raw) {
		t.Errorf("a refused pull changed the existing file")
	}
	if n := dbSize(t, srv.Addr()); n != 0 {
		t.Errorf("%d keys in Redis after failed pushes", n)
	}
	if n := dbSize(t, server); n != 0 {
		t.Errorf("%d keys on the server after failed pushes", n)
	}
	// No temporary files left beside the outputs.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}

	// A keyed filter in Redis cannot be pulled.
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	if _, err := redisfilter.CreateFrom(context.Background(), client, "keyed", keyed, redisfilter.WithKey([16]byte{1})); err != nil {
		t.Fatal(err)
	}
	runCLIFails(t, exitError, []string{"is keyed"}, "pull", "redis://"+srv.Addr()+"/0/keyed", filepath.Join(dir, "out"))
}

// TestTransferProgress: on a terminal, the line counts the bytes done,
// then says how long the transfer took; elsewhere nothing is drawn.
func TestTransferProgress(t *testing.T) {
	defer func(f func(w io.Writer) bool) { transferTerminal = f }(transferTerminal)
	var out bytes.Buffer
	transferTerminal = func(w io.Writer) bool { return w == &out }

	const total = 32 << 20
	var done atomic.Uint64
	done.Store(total / 4)
	p := startTransfer(&out, "push", total, func() uint64 { return done.Load() }, true)
	if p == nil {
		t.Fatal("no progress on a terminal")
	}
	time.Sleep(3 * transferEvery)
	p.done()
	p.stop() // again: harmless
	s := out.String()
	for _, want := range []string{"\rpush: 8.0 MiB of 32.0 MiB (25%), ", "\r\x1b[K", "push: 32.0 MiB in "} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%q", want, s)
		}
	}

	// Bytes done unknown: the size and the time only.
	out.Reset()
	p = startTransfer(&out, "pull", total, nil, false)
	time.Sleep(2 * transferEvery)
	p.stop()
	if s := out.String(); !strings.Contains(s, "\rpull: 32.0 MiB, ") || strings.Contains(s, "%") || strings.Contains(s, " in ") {
		t.Errorf("unknown progress drew %q", s)
	}

	// Small filters and non-terminals: nothing.
	var other bytes.Buffer
	for _, p := range []*transfer{
		startTransfer(&out, "push", transferMinBytes-1, nil, true),
		startTransfer(&other, "push", total, nil, true),
	} {
		if p != nil {
			t.Errorf("progress drawn where it should not be")
		}
		p.set(1)
		p.done()
		p.stop()
	}
}
