package guard

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/bloomery/bloom/server"
	"github.com/redis/go-redis/v9"
)

// startBloomery runs a bloomery server (package server, in memory) on a
// loopback port for the test and returns a client of it.
func startBloomery(t *testing.T) *redis.Client {
	t.Helper()
	srv, err := server.New(server.Config{Dir: "-", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	t.Cleanup(func() {
		c.Close()
		srv.Shutdown(context.Background())
	})
	return c
}

// startRedisBloom runs redis-server with the RedisBloom module named by
// $BLOOMERY_REDISBLOOM, the module the server's transcripts are recorded
// from; without it the test is skipped (no server in this repository
// speaks CF.* yet).
func startRedisBloom(t *testing.T) *redis.Client {
	t.Helper()
	module := os.Getenv("BLOOMERY_REDISBLOOM")
	if module == "" {
		t.Skip("CF.* needs RedisBloom: set BLOOMERY_REDISBLOOM to its module")
	}
	srv := redistest.Start(t, "--loadmodule", module)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

// shared are the options of the shared memberships in tests: short
// windows, so that a rebuild is quick.
var sharedTest = &SharedOptions{RecentWindow: time.Second, RebuildLease: time.Second}

// TestServerGuard runs the shared-guard checks on BF and CF: BF on
// bloomery serve always, and on RedisBloom with CF when it is available.
func TestServerGuard(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  func(*testing.T) *redis.Client
		open   func(redis.UniversalClient, string, *SharedOptions) (Membership, error)
		insert string
	}{
		{"bf-bloomery", startBloomery, func(c redis.UniversalClient, k string, o *SharedOptions) (Membership, error) { return NewBF(c, k, o) }, "BF.INSERT"},
		{"bf-redisbloom", startRedisBloom, func(c redis.UniversalClient, k string, o *SharedOptions) (Membership, error) { return NewBF(c, k, o) }, "BF.INSERT"},
		{"cf-redisbloom", startRedisBloom, func(c redis.UniversalClient, k string, o *SharedOptions) (Membership, error) { return NewCF(c, k, o) }, "CF.INSERT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.start(t)
			open := func() Membership {
				m, err := tc.open(c, "users", sharedTest)
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			testSharedGuard(t, open(), open, insertFunc(c, tc.insert, "users"))
		})
	}
}

// testSharedGuard checks a shared membership m through two guards, as two
// processes of one service: the first fill, answers, writes seen by the
// other guard (negative cache included), and the hammer.
// plant puts id into the filter behind the guards' backs (a false
// positive of their source).
func testSharedGuard(t *testing.T, m Membership, another func() Membership, plant func(id string) error) {
	ctx := context.Background()
	if ok, err := m.Ready(ctx); ok || err != nil {
		t.Fatalf("Ready before the first fill = %v, %v", ok, err)
	}
	if ok, _ := m.Test(ctx, "row1"); !ok {
		t.Fatal("a membership that is not ready must answer 'may exist'")
	}
	src := newSource(3000)
	o1, o2 := src.options(m), src.options(another())
	o1.NegativeTTL, o2.NegativeTTL = 2*time.Second, 2*time.Second
	// Added's and Removed's promise rests on the commit window: room for
	// a busy machine (the rebuilds wait it out each time).
	o1.CommitWindow, o2.CommitWindow = 250*time.Millisecond, 250*time.Millisecond
	g1, g2 := newGuard(t, o1), newGuard(t, o2)
	if s := g2.Stats(); s.Rebuilds != 0 {
		t.Fatalf("the second guard rebuilt a ready membership: %+v", s)
	}
	for _, g := range []*Guard[string]{g1, g2} {
		if v, err := g.Get(ctx, "row2999"); err != nil || v != "value of row2999" {
			t.Fatalf("Get = %q, %v", v, err)
		}
		if _, err := g.Get(ctx, "absent"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(absent) = %v", err)
		}
	}
	// A false positive, put into the filter behind the guards' backs:
	// g2's negative cache learns it, then g1 writes the row.
	if err := plant("fp"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := g2.Get(ctx, "fp"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(fp) = %v", err)
		}
	}
	if s := g2.Stats(); s.FalsePositives != 1 || s.NegativeHits != 2 {
		t.Fatalf("stats of the second guard %+v", s)
	}
	if err := g1.Write(ctx, "fp", func(context.Context) error { src.insert("fp"); return nil }); err != nil {
		t.Fatal(err)
	}
	if v, err := g2.Get(ctx, "fp"); err != nil || v != "value of fp" {
		t.Fatalf("the other guard's Get after the write = %q, %v", v, err)
	}
	hammer{writers: 2, perWriter: 150, readers: 2, minRebuilds: 3, deletes: true}.run(t, src, g1, g2)
}

// insertFunc plants an item with cmd (BF.INSERT, CF.INSERT).
func insertFunc(c redis.UniversalClient, cmd, key string) func(string) error {
	return func(id string) error {
		return c.Do(context.Background(), cmd, key, "NOCREATE", "ITEMS", id).Err()
	}
}

func TestBFRebuildClaim(t *testing.T) {
	c := startBloomery(t)
	m, _ := NewBF(c, "{t}k", sharedTest)
	other, _ := NewBF(c, "{t}k", sharedTest)
	ctx := context.Background()
	started := make(chan struct{})
	release := make(chan struct{})
	ids := func(yield func(string, error) bool) {
		close(started)
		<-release
		yield("a", nil)
	}
	done := make(chan error, 1)
	go func() { done <- m.Rebuild(ctx, Plan{Capacity: 10, FalsePositiveRate: 0.01}, ids) }()
	<-started
	err := other.Rebuild(ctx, Plan{Capacity: 10, FalsePositiveRate: 0.01}, func(func(string, error) bool) {})
	if !errors.Is(err, ErrRebuildRunning) {
		t.Fatalf("a second rebuild = %v, want ErrRebuildRunning", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ok, _ := other.Test(ctx, "a"); !ok {
		t.Fatal("the rebuilt filter lacks its item")
	}
	if ok, _ := other.Test(ctx, "b"); ok {
		t.Fatal("the rebuilt filter has an item nobody added")
	}
	if n, _ := c.Exists(ctx, "{t}k:guard:next").Result(); n != 0 {
		t.Fatal("the claim outlived the rebuild")
	}
}

func TestSameSlot(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"users", "{users}:x"},
		{"{app}users", "{app}users:x"},
		{"a{b", "{a{b}:x"},
	} {
		if got, err := sameSlot(tc.key, ":x"); err != nil || got != tc.want {
			t.Errorf("sameSlot(%q) = %q, %v; want %q", tc.key, got, err, tc.want)
		}
	}
	for _, key := range []string{"a}b", "a{}b"} {
		if _, err := sameSlot(key, ":x"); !errors.Is(err, ErrInvalid) {
			t.Errorf("sameSlot(%q) = %v, want ErrInvalid", key, err)
		}
	}
}

func TestCFRemove(t *testing.T) {
	c := startRedisBloom(t)
	m, err := NewCF(c, "users", sharedTest)
	if err != nil {
		t.Fatal(err)
	}
	src := newSource(1000)
	o := src.options(m)
	o.NegativeTTL = time.Second
	o.CommitWindow = 200 * time.Millisecond
	g := newGuard(t, o)
	ctx := context.Background()
	// Within the CommitWindow after the rename, Remove declines.
	if ok, err := m.Remove(ctx, "row1"); ok || err != nil {
		t.Fatalf("Remove right after a rebuild = %v, %v", ok, err)
	}
	time.Sleep(300 * time.Millisecond)
	src.delete("row1")
	if err := g.Removed(ctx, "row1"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := m.Test(ctx, "row1"); ok {
		t.Fatal("row1 still in the cuckoo filter")
	}
	for i := 2; i < 1000; i++ {
		if ok, _ := m.Test(ctx, "row"+strconv.Itoa(i)); !ok {
			t.Fatalf("row%d lost", i)
		}
	}
	if s := g.Stats(); s.Removed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// Instances of a service that start together on an empty shared filter:
// one fills it, the others wait until it is ready.
func TestSharedConcurrentStart(t *testing.T) {
	c := startBloomery(t)
	src := newSource(500)
	var wg sync.WaitGroup
	guards := make([]*Guard[string], 3)
	for i := range guards {
		wg.Go(func() {
			m, err := NewBF(c, "users", sharedTest)
			if err != nil {
				t.Error(err)
				return
			}
			o := src.options(m)
			o.NegativeTTL = time.Second
			guards[i], err = New(context.Background(), o)
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	fills := uint64(0)
	for _, g := range guards {
		if g == nil {
			t.FailNow()
		}
		defer g.Close()
		fills += g.Stats().Rebuilds
		if _, err := g.Get(context.Background(), "row499"); err != nil {
			t.Fatal(err)
		}
	}
	if fills != 1 {
		t.Fatalf("%d fills by 3 instances, want 1", fills)
	}
}
