package guard

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

func TestRedisFilterGuard(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	testRedisFilter(t, c)
}

func TestRedisFilterGuardCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { c.Close() })
	testRedisFilter(t, c)
}

func testRedisFilter(t *testing.T, c redis.UniversalClient) {
	key := [16]byte{1, 2, 3}
	open := func() Membership {
		m, err := NewRedisFilter(c, "users", sharedTest, redisfilter.WithKey(key), redisfilter.WithShardBytes(4096))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	plant := func(id string) error {
		f, err := redisfilter.Open(context.Background(), c, "users", redisfilter.WithKey(key))
		if err != nil {
			return err
		}
		_, err = f.Add(context.Background(), []byte(id))
		return err
	}
	testSharedGuard(t, open(), open, plant)
}

func TestRedisFilterRebuildClaim(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	m, _ := NewRedisFilter(c, "k", sharedTest)
	other, _ := NewRedisFilter(c, "k", sharedTest)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	ids := func(yield func(string, error) bool) {
		close(started)
		<-release
		yield("a", nil)
	}
	plan := Plan{Capacity: 100, FalsePositiveRate: 0.01, CommitWindow: time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- m.Rebuild(ctx, plan, ids) }()
	<-started
	if err := other.Rebuild(ctx, plan, func(func(string, error) bool) {}); !errors.Is(err, ErrRebuildRunning) {
		t.Fatalf("a second rebuild = %v, want ErrRebuildRunning", err)
	}
	// An add during the rebuild waits in the journal and reaches the new
	// generation.
	if err := other.Add(ctx, "b", nil); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if ok, _ := other.Test(ctx, id); !ok {
			t.Fatalf("%s missing after the rebuild", id)
		}
	}
	if ok, _ := other.Test(ctx, "c"); ok {
		t.Fatal("c present after the rebuild")
	}
	if n, _ := c.Exists(ctx, "{k}:guard:state", "{k}:guard:journal").Result(); n != 0 {
		t.Fatalf("%d rebuild keys left behind", n)
	}
}

// A process that has not looked since another rotated the filter must
// not answer absent from its old generation.
func TestRedisFilterFollowsRotation(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	m1, _ := NewRedisFilter(c, "k", sharedTest)
	m2, _ := NewRedisFilter(c, "k", sharedTest)
	plan := Plan{Capacity: 1000, FalsePositiveRate: 0.01, CommitWindow: time.Millisecond}
	none := func(func(string, error) bool) {}
	if err := m1.Rebuild(ctx, plan, none); err != nil {
		t.Fatal(err)
	}
	if ok, _ := m2.Test(ctx, "x"); ok {
		t.Fatal("x present in an empty filter")
	}
	if err := m1.Rebuild(ctx, plan, none); err != nil {
		t.Fatal(err)
	}
	if err := m1.Add(ctx, "x", nil); err != nil {
		t.Fatal(err)
	}
	if ok, _ := m2.Test(ctx, "x"); !ok {
		t.Fatal("x absent to a process still on the old generation")
	}
}

// The lease's renewal touches the state key while a rebuild swaps it
// (CI met this on a cluster): the swap must not fail for that, and must
// still fail when the value itself changed.
func TestRedisFilterSwapStateUnderRenewal(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	r, err := NewRedisFilter(c, "k", sharedTest)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Set(ctx, r.state, "building t", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	var renewals atomic.Int64
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if c.PExpire(ctx, r.state, time.Minute).Err() == nil {
				renewals.Add(1)
			}
		}
	}()
	// At least 300 swaps, and on until 5 renewals came during them (a
	// loaded machine under -race can run 300 before the renewer's first
	// round trip), an even number, so that the state ends "building t".
	states := []string{"building t", "sealing t"}
	from, deadline := renewals.Load(), time.Now().Add(20*time.Second)
	for i := 0; i < 300 || renewals.Load()-from < 5 || i%2 == 1; i++ {
		if time.Now().After(deadline) {
			close(stop)
			<-done
			t.Fatalf("the lease was renewed %d times during %d swaps", renewals.Load()-from, i)
		}
		if err := r.swapState(ctx, states[i%2], states[(i+1)%2], false); err != nil {
			close(stop)
			<-done
			t.Fatalf("swap %d under renewal: %v", i, err)
		}
	}
	close(stop)
	<-done
	if err := r.swapState(ctx, "sealing t", "building t", false); err == nil || !strings.Contains(err.Error(), "was lost") {
		t.Fatalf("a swap from a state that is not current = %v", err)
	}
}
