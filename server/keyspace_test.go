package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bloomery/bloom"
)

func newEntry(t *testing.T) *entry {
	t.Helper()
	f, err := bloom.NewScalable(100, 0.01, bloom.ScalableOptions{RedisBloom: true})
	if err != nil {
		t.Fatal(err)
	}
	return &entry{filter: f}
}

func TestKeyspaceExpiry(t *testing.T) {
	ks := newKeyspace()
	now := time.UnixMilli(1_000_000)
	ks.now = func() time.Time { return now }
	unlock := ks.lock("a", "b", "c")
	ks.set("a", newEntry(t))
	b := newEntry(t)
	b.expireAt = now.UnixMilli() + 1000
	ks.set("b", b)
	c := newEntry(t)
	c.expireAt = now.UnixMilli() + 5000
	ks.set("c", c)
	unlock()
	now = now.Add(1500 * time.Millisecond)
	unlock = ks.lock("a", "b")
	if ks.get("a") == nil || ks.get("b") != nil {
		t.Fatal("a must live, b must have expired")
	}
	unlock()
	if got := ks.len(); got != 2 {
		t.Fatalf("len %d after b expired on access", got)
	}
	now = now.Add(5 * time.Second)
	if n := ks.sweep(); n != 1 {
		t.Fatalf("sweep removed %d", n)
	}
	_, keys := ks.scan(0, 1<<20, func(string) bool { return true })
	if fmt.Sprint(keys) != "[a]" {
		t.Fatalf("keys %v", keys)
	}
	unlock = ks.lock("a")
	if !ks.del("a") || ks.del("a") {
		t.Fatal("del")
	}
	unlock()
	unlockAll := ks.lockAll()
	old := ks.detach()
	unlockAll()
	ks.release(old)
	if ks.len() != 0 {
		t.Fatal("flush")
	}
}

// TestKeyspaceLocks: many goroutines locking overlapping key sets never
// deadlock, and updates to a key's data under its lock are not lost (the
// race detector checks the exclusion).
func TestKeyspaceLocks(t *testing.T) {
	ks := newKeyspace()
	const keys, goroutines, rounds = 17, 8, 2000
	var counts [keys]int // counts[i] is guarded by the lock of key i
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				a, b := (g+i)%keys, (g*7+i)%keys
				unlock := ks.lock(fmt.Sprint("k", b), fmt.Sprint("k", a))
				counts[a]++
				if a != b {
					counts[b]++
				}
				unlock()
			}
		})
	}
	wg.Wait()
	total, want := 0, 0
	for _, c := range counts {
		total += c
	}
	for g := range goroutines {
		for i := range rounds {
			want++
			if (g+i)%keys != (g*7+i)%keys {
				want++
			}
		}
	}
	if total != want {
		t.Fatalf("%d updates, want %d", total, want)
	}
}
