package guard

import (
	"context"
	"strconv"
	"testing"
	"time"
)

func TestMemoryCacheBoundAndLRU(t *testing.T) {
	c := NewMemoryCache[int](cacheShards*4, time.Hour) // 4 per shard
	ctx := context.Background()
	for i := range 10000 {
		c.Set(ctx, strconv.Itoa(i), i)
	}
	if n := c.Len(); n != cacheShards*4 {
		t.Fatalf("%d entries, want the bound %d", n, cacheShards*4)
	}
	// The last four of each shard survive; refreshing one by Get keeps it
	// over a newer entry.
	s := c.shard("9999")
	s.mu.Lock()
	oldest := s.lru.prev.id
	s.mu.Unlock()
	if _, ok, _ := c.Get(ctx, oldest); !ok {
		t.Fatalf("%s missing", oldest)
	}
	for i := 10000; ; i++ {
		id := strconv.Itoa(i)
		if c.shard(id) != s {
			continue
		}
		c.Set(ctx, id, i)
		break
	}
	if _, ok, _ := c.Get(ctx, oldest); !ok {
		t.Fatal("the most recently used entry was evicted")
	}
}

func TestMemoryCacheTTLAndDelete(t *testing.T) {
	c := NewMemoryCache[string](100, 30*time.Millisecond)
	ctx := context.Background()
	c.Set(ctx, "a", "1")
	c.Set(ctx, "b", "2")
	if v, ok, _ := c.Get(ctx, "a"); !ok || v != "1" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	c.Delete(ctx, "b")
	if _, ok, _ := c.Get(ctx, "b"); ok {
		t.Fatal("deleted entry found")
	}
	c.Set(ctx, "a", "3") // an update
	if v, _, _ := c.Get(ctx, "a"); v != "3" {
		t.Fatalf("updated entry = %q", v)
	}
	time.Sleep(50 * time.Millisecond)
	if _, ok, _ := c.Get(ctx, "a"); ok {
		t.Fatal("expired entry found")
	}
	if c.Len() != 0 {
		t.Fatalf("%d entries after expiry", c.Len())
	}
}

func TestNoRaceMemoryCacheGetAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	c := NewMemoryCache[string](100, time.Hour)
	ctx := context.Background()
	c.Set(ctx, "k", "v")
	if n := testing.AllocsPerRun(1000, func() { c.Get(ctx, "k") }); n != 0 {
		t.Fatalf("%v allocations per Get", n)
	}
}
