package redisfilter

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom"
)

func TestCreateOpen(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	f := mustCreate(t, c, "seen", 10_000, 0.01)
	if _, err := Create(ctx, c, "seen", 10, 0.1); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: %v", err)
	}
	g, err := Open(ctx, c, "seen")
	if err != nil {
		t.Fatal(err)
	}
	if g.Meta().String() != f.Meta().String() {
		t.Fatalf("opened metadata differs:\n%s\n%s", g.Meta(), f.Meta())
	}
	want, _ := bloom.Size(10_000, 0.01, bloom.Blocked)
	if g.Sizing() != want {
		t.Fatalf("sizing %v, want %v", g.Sizing(), want)
	}
	if _, err := Open(ctx, c, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open missing: %v", err)
	}
	c.Set(ctx, "junk", "hello", 0)
	c.RPush(ctx, "list", "x")
	broken := f.Meta().String()
	for name, value := range map[string]string{
		"no-k":      "bloomery-filter 1\nlayout blocked\n",
		"bad-bits":  replaceLine(broken, "bits ", "bits 1000"),
		"two-p":     broken + "p 0.5\n",
		"v2":        "bloomery-filter 2\n" + broken[len("bloomery-filter 1\n"):],
		"no-shards": dropLines(broken, "shard "),
	} {
		c.Set(ctx, name, value, 0)
		if _, err := Open(ctx, c, name); !errors.Is(err, ErrMetadata) {
			t.Errorf("Open %s: %v", name, err)
		}
	}
	for _, name := range []string{"junk", "list"} {
		if _, err := Open(ctx, c, name); !errors.Is(err, ErrMetadata) {
			t.Errorf("Open %s: %v", name, err)
		}
	}
	// Keyed filters need their key.
	key := [16]byte{1, 2, 3}
	mustCreate(t, c, "keyed", 1000, 0.01, WithKey(key))
	if _, err := Open(ctx, c, "keyed"); !errors.Is(err, ErrKeyRequired) {
		t.Errorf("keyed without key: %v", err)
	}
	if _, err := Open(ctx, c, "keyed", WithKey([16]byte{9})); !errors.Is(err, ErrWrongKey) {
		t.Errorf("keyed with the wrong key: %v", err)
	}
	if _, err := Open(ctx, c, "seen", WithKey(key)); !errors.Is(err, ErrWrongKey) {
		t.Errorf("unkeyed with a key: %v", err)
	}
	if _, err := Open(ctx, c, "keyed", WithKey(key)); err != nil {
		t.Error(err)
	}
	// Bad arguments.
	if _, err := Create(ctx, c, "x", 0, 0.01); !errors.Is(err, bloom.ErrInvalidCapacity) {
		t.Errorf("n=0: %v", err)
	}
	if _, err := Create(ctx, c, "x", 10, 0.01, WithShardBytes(100)); !errors.Is(err, ErrInvalid) {
		t.Errorf("shard size 100: %v", err)
	}
	if _, err := Create(ctx, c, "x", 10, 0.01, WithLayout(bloom.RedisBloom)); !errors.Is(err, ErrInvalid) {
		t.Errorf("RedisBloom layout: %v", err)
	}
	if _, err := Create(ctx, c, "x", 1e9, 1e-7, WithMaxBytes(1<<20)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the size limit: %v", err)
	}
	if _, err := Create(ctx, c, "x", 1e6, 0.01, WithLayout(bloom.Classic), WithShardBytes(64<<10)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("sharded classic: %v", err)
	}
}

func replaceLine(text, prefix, with string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i] = with + "\n"
		}
	}
	return strings.Join(lines, "")
}

func dropLines(text, prefix string) string {
	var out []string
	for _, l := range strings.SplitAfter(text, "\n") {
		if !strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// TestNoRaceSameAsInMemory: for both layouts and keyed hashing, the Redis filter
// answers Add and Exists exactly as bloom.Filter of the same geometry,
// holds the same bytes, and its measured rate is at most p.
func TestNoRaceSameAsInMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("one goroutine against the in-memory filter, long under the race detector: the race-free pass (make accuracy) runs it")
	}
	ctx := context.Background()
	_, c := newClient(t)
	key := [16]byte{7}
	cases := []struct {
		name   string
		opts   []Option
		bopt   []bloom.Option
		probes int // 10^6 to measure the rate; fewer to compare answers only
	}{
		{"blocked", nil, nil, 1_000_000},
		{"classic", []Option{WithLayout(bloom.Classic)}, nil, 1_000_000},
		{"keyed", []Option{WithKey(key)}, []bloom.Option{bloom.WithKey(key)}, 100_000},
		{"sharded", []Option{WithShardBytes(4096)}, nil, 100_000},
	}
	const n, p = 20_000, 0.01
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := mustCreate(t, c, "same-"+tc.name, n, p, tc.opts...)
			mem, err := bloom.NewSized(f.Sizing(), tc.bopt...)
			if err != nil {
				t.Fatal(err)
			}
			in := items("user", 0, n)
			in = append(in, in[:100]...) // repeats within the batch
			got, err := f.AddMany(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range in {
				if want := mem.Add(it); got[i] != want {
					t.Fatalf("AddMany[%d] = %v, in memory %v", i, got[i], want)
				}
			}
			probes := items("user", n, n+tc.probes)
			ex, err := f.ExistsMany(ctx, probes)
			if err != nil {
				t.Fatal(err)
			}
			fp := 0
			for i, it := range probes {
				if ex[i] != mem.Test(it) {
					t.Fatalf("ExistsMany[%d] = %v, in memory %v", i, ex[i], mem.Test(it))
				}
				if ex[i] {
					fp++
				}
			}
			if ub := wilson(fp, len(probes)); tc.probes >= 1_000_000 && ub > p {
				t.Errorf("rate %d/%d, 99%% upper bound %.4f > %g", fp, len(probes), ub, p)
			}
			all, err := f.ExistsMany(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for i, ok := range all {
				if !ok {
					t.Fatalf("false negative: %q", in[i])
				}
			}
			for _, it := range [][]byte{[]byte("single-1"), []byte("user5")} {
				isNew, err := f.Add(ctx, it)
				if err != nil || isNew != mem.Add(it) {
					t.Fatalf("Add(%q) = %v, %v", it, isNew, err)
				}
				ok, err := f.Exists(ctx, it)
				if err != nil || !ok {
					t.Fatalf("Exists(%q) = %v, %v", it, ok, err)
				}
			}
			down, err := f.Download(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !sameBits(down, mem) {
				t.Fatal("downloaded bits differ from the in-memory filter")
			}
		})
	}
}

func wilson(x, n int) float64 {
	const z = 2.3263478740408408
	fn, ph := float64(n), float64(x)/float64(n)
	return (ph + z*z/(2*fn) + z*math.Sqrt(ph*(1-ph)/fn+z*z/(4*fn*fn))) / (1 + z*z/fn)
}

func sameBits(a, b *bloom.Filter) bool {
	if a.Bytes() != b.Bytes() {
		return false
	}
	x, y := make([]byte, a.Bytes()), make([]byte, b.Bytes())
	a.ReadAt(x, 0)
	b.ReadAt(y, 0)
	return bytes.Equal(x, y)
}

// TestUploadDownload: a filter built offline is served from Redis, and a
// Redis filter saved to a file loads with the same answers.
func TestUploadDownload(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	for _, shard := range []uint64{DefaultShardBytes, 1024} {
		mem, _ := bloom.New(50_000, 0.001)
		for _, it := range items("k", 0, 50_000) {
			mem.Add(it)
		}
		f, err := CreateFrom(ctx, c, "up"+string(rune('a'+shard%26)), mem, WithShardBytes(shard))
		if err != nil {
			t.Fatal(err)
		}
		ex, err := f.ExistsMany(ctx, items("k", 0, 60_000))
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range ex {
			if ok != mem.Test([]byte("k"+itoa(i))) {
				t.Fatalf("shard %d: item %d: redis %v, memory %v", shard, i, ok, !ok)
			}
		}
		var file bytes.Buffer
		down, err := f.Download(ctx)
		if err != nil {
			t.Fatal(err)
		}
		down.WriteTo(&file)
		back, err := bloom.Load(&file)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(back, mem) {
			t.Fatal("file from Redis differs")
		}
		other, _ := bloom.New(10, 0.1)
		if err := f.Upload(ctx, other); !errors.Is(err, ErrIncompatible) {
			t.Errorf("upload of another geometry: %v", err)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRoundTrips counts commands: one BITFIELD per single Add, one
// GETRANGE per single Exists (blocked layout), and batches in commands of
// at most MaxOpsPerCommand operations.
func TestRoundTrips(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	f := mustCreate(t, c, "rt", 100_000, 0.01, WithRefresh(0))
	before := commandCalls(t, c)
	f.Add(ctx, []byte("a"))
	f.Exists(ctx, []byte("a"))
	after := commandCalls(t, c)
	if after["bitfield"]-before["bitfield"] != 1 || after["getrange"]-before["getrange"] != 1 || after["bitfield_ro"] != before["bitfield_ro"] {
		t.Fatalf("single calls: %v → %v", before, after)
	}
	const batch = 10_000
	if _, err := f.AddMany(ctx, items("b", 0, batch)); err != nil {
		t.Fatal(err)
	}
	perCmd := MaxOpsPerCommand / int(f.Sizing().K)
	want := (batch + perCmd - 1) / perCmd
	if got := commandCalls(t, c)["bitfield"] - after["bitfield"]; got != want {
		t.Fatalf("AddMany of %d items: %d BITFIELD commands, want %d", batch, got, want)
	}
}

// TestLifecycle: Expire covers every key, Delete removes them all.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	f := mustCreate(t, c, "life", 100_000, 0.01, WithShardBytes(16<<10))
	if _, err := f.AddMany(ctx, items("x", 0, 100_000)); err != nil {
		t.Fatal(err)
	}
	m := f.Meta()
	if len(m.Shards) < 5 {
		t.Fatalf("%d shards", len(m.Shards))
	}
	in, err := f.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if in.Count < 95_000 || in.Count > 105_000 || in.EstimatedFPR > 0.01 || in.Fill < 0.3 || in.Fill > 0.7 {
		t.Errorf("info %+v", in)
	}
	if err := f.Expire(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, k := range append(m.Shards, "life") {
		if ttl := c.PTTL(ctx, k).Val(); ttl < 59*time.Minute {
			t.Errorf("key %s: ttl %v", k, ttl)
		}
	}
	if in, _ := f.Info(ctx); in.TTL < 59*time.Minute {
		t.Errorf("info TTL %v", in.TTL)
	}
	if err := f.Expire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, m.Shards[0]).Val(); ttl != -1 {
		t.Errorf("after persist: ttl %v", ttl)
	}
	if err := f.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys left after Delete", n)
	}
	if _, err := Open(ctx, c, "life"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open after Delete: %v", err)
	}
}

// TestRestartAndContext: operations recover after Redis restarts, and a
// cancelled context stops them with its error.
func TestRestartAndContext(t *testing.T) {
	ctx := context.Background()
	srv, c := newClient(t, "--appendonly", "yes", "--appendfsync", "always")
	f := mustCreate(t, c, "r", 1000, 0.01)
	if _, err := f.Add(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	var ok bool
	var err error
	for range 50 { // the pool's old connections fail once each
		if ok, err = f.Exists(ctx, []byte("before")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || !ok {
		t.Fatalf("after restart: %v, %v", ok, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Add(cctx, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	if _, err := f.AddMany(ctx, nil); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
}
