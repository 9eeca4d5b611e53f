package redisfilter

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// checkRotation rotates a filter on client c twice (from a fill function,
// then from an in-memory filter) and checks that readers switch, the TTL
// carries over and the old generation expires.
func checkRotation(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	f := mustCreate(t, c, "rot", 20_000, 0.001, WithShardBytes(2048), WithRefresh(50*time.Millisecond))
	reader, err := Open(ctx, c, "rot", WithRefresh(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddMany(ctx, items("old", 0, 5000)); err != nil {
		t.Fatal(err)
	}
	if err := f.Expire(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	old := f.Meta()
	err = f.Rotate(ctx, func(add func([][]byte) error) error {
		for i := 0; i < 10_000; i += 1000 {
			if err := add(items("new", i, i+1000)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.Meta().Generation != old.Generation+1 {
		t.Fatalf("generation %d after rotation from %d", f.Meta().Generation, old.Generation)
	}
	time.Sleep(100 * time.Millisecond) // the reader's refresh interval
	for _, g := range []*Filter{f, reader} {
		isNew, err := g.ExistsMany(ctx, items("new", 0, 10_000))
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range isNew {
			if !ok {
				t.Fatalf("new%d missing after rotation", i)
			}
		}
		gone, _ := g.ExistsMany(ctx, items("old", 0, 5000))
		if n := count(gone); n > 50 {
			t.Fatalf("%d of 5000 old items still present", n)
		}
	}
	for _, k := range append(f.Meta().Shards, "rot") {
		if ttl := c.PTTL(ctx, k).Val(); ttl < 59*time.Minute {
			t.Errorf("TTL of %s after rotation: %v", k, ttl)
		}
	}
	for _, k := range old.Shards {
		// -2: the grace has already ended on a slow machine, which is fine;
		// -1 (no expiry) or a long one is not.
		if ttl := c.PTTL(ctx, k).Val(); ttl == -1 || ttl > 10*time.Second {
			t.Errorf("old shard %s: TTL %v, want a short grace", k, ttl)
		}
	}
	// Rotate again from an in-memory filter.
	mem, _ := bloom.NewSized(f.Sizing())
	for _, it := range items("mem", 0, 3000) {
		mem.Add(it)
	}
	if err := f.RotateFrom(ctx, mem); err != nil {
		t.Fatal(err)
	}
	ex, _ := f.ExistsMany(ctx, items("mem", 0, 3000))
	if count(ex) != 3000 {
		t.Fatalf("%d of 3000 uploaded items present", count(ex))
	}
	other, _ := bloom.New(10, 0.1)
	if err := f.RotateFrom(ctx, other); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("rotate from another geometry: %v", err)
	}
	// A rotation that loses the race to a concurrent one is discarded.
	err = f.Rotate(ctx, func(add func([][]byte) error) error {
		return f.Delete(ctx) // the filter disappears meanwhile
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("rotation of a deleted filter: %v", err)
	}
}

func count(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func TestRotation(t *testing.T) {
	_, c := newClient(t)
	checkRotation(t, c)
	// Only the old generations remain, expiring within their grace.
	ctx := context.Background()
	for _, k := range c.Keys(ctx, "*").Val() {
		if ttl := c.PTTL(ctx, k).Val(); ttl == -1 || ttl > 10*time.Second { // -2: expired since KEYS
			t.Errorf("key %s left with TTL %v", k, ttl)
		}
	}
}

func TestCluster(t *testing.T) {
	ctx := context.Background()
	_, c := newCluster(t)
	t.Run("rotation", func(t *testing.T) { checkRotation(t, c) })
	t.Run("sharded", func(t *testing.T) {
		f := mustCreate(t, c, "big", 200_000, 0.01, WithShardBytes(8<<10))
		m := f.Meta()
		if len(m.Shards) < 20 {
			t.Fatalf("%d shards", len(m.Shards))
		}
		in := items("c", 0, 200_000)
		if _, err := f.AddMany(ctx, in); err != nil {
			t.Fatal(err)
		}
		ex, err := f.ExistsMany(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if count(ex) != len(in) {
			t.Fatalf("%d of %d present", count(ex), len(in))
		}
		// Every master holds some of the shards.
		var masters atomic.Int32
		err = c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			if node.DBSize(ctx).Val() > 0 {
				masters.Add(1)
			}
			return nil
		})
		if err != nil || masters.Load() != 3 {
			t.Fatalf("shards on %d of 3 masters (%v)", masters.Load(), err)
		}
		mem, _ := bloom.NewSized(f.Sizing())
		for _, it := range in {
			mem.Add(it)
		}
		down, err := f.Download(ctx)
		if err != nil || !sameBits(down, mem) {
			t.Fatalf("download from the cluster differs (%v)", err)
		}
		if err := f.Expire(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, k := range m.Shards {
			if ttl := c.PTTL(ctx, k).Val(); ttl <= 0 {
				t.Fatalf("shard %s: TTL %v", k, ttl)
			}
		}
		if err := f.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		for _, k := range append(m.Shards, "big") {
			if c.Exists(ctx, k).Val() != 0 {
				t.Fatalf("key %s left after Delete", k)
			}
		}
	})
}
