package guard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMemoryCountingRemove(t *testing.T) {
	src := newSource(1000)
	o := src.options(NewMemoryCounting())
	o.CommitWindow = 100 * time.Millisecond
	g := newGuard(t, o)
	ctx := context.Background()
	m := g.m.(*MemoryCounting)
	// Right after a rebuild the filter may not hold a row deleted just
	// before it read the source: Remove declines.
	if ok, err := m.Remove(ctx, "row1"); ok || err != nil {
		t.Fatalf("Remove right after the switch = %v, %v; want declined", ok, err)
	}
	time.Sleep(150 * time.Millisecond)
	src.delete("row1")
	if err := g.Removed(ctx, "row1"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := m.Test(ctx, "row1"); ok {
		t.Fatal("row1 still in the counting filter after Removed")
	}
	if _, err := g.Get(ctx, "row1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a removed row = %v", err)
	}
	for i := 2; i < 1000; i++ {
		if ok, _ := m.Test(ctx, "row"+strconv.Itoa(i)); !ok {
			t.Fatalf("row%d lost by removing row1", i)
		}
	}
	if s := g.Stats(); s.Removed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestRemovedDropsCachedValue(t *testing.T) {
	src := newSource(10)
	g := newGuard(t, src.options(nil)) // a Bloom filter: cannot delete
	ctx := context.Background()
	if _, err := g.Get(ctx, "row1"); err != nil {
		t.Fatal(err)
	}
	src.delete("row1")
	if err := g.Removed(ctx, "row1"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Get(ctx, "row1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Removed = %v, want ErrNotFound from a load", err)
	}
	if s := g.Stats(); s.Removed != 0 || s.FalsePositives != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestMemoryBeforeFill(t *testing.T) {
	m := NewMemory()
	ctx := context.Background()
	if ok, _ := m.Ready(ctx); ok {
		t.Fatal("ready before any rebuild")
	}
	if ok, _ := m.Test(ctx, "x"); !ok {
		t.Fatal("an empty membership must answer 'may exist'")
	}
}

// Writers add through the membership (commit: the insert) while a
// rebuilder rebuilds back to back and checks, after each rebuild, every
// row committed so far. A write that added to the next generation of one
// rebuild may commit after the following rebuild read the source: that
// rebuild must wait for it too.
func TestMemoryBackToBackRebuilds(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    *Memory
	}{{"filter", NewMemory()}, {"counting", NewMemoryCounting().Memory}} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(100)
			m := tc.m
			ctx := context.Background()
			plan := Plan{Capacity: 20000, FalsePositiveRate: 0.01}
			if err := m.Rebuild(ctx, plan, src.ids(ctx)); err != nil {
				t.Fatal(err)
			}
			var committed sync.Map
			var stop atomic.Bool
			var writers, rebuilder sync.WaitGroup
			for w := range 4 {
				writers.Go(func() {
					for i := range 2000 {
						id := fmt.Sprintf("w%d-%d", w, i)
						m.Add(ctx, id, func(context.Context) error { src.insert(id); return nil })
						committed.Store(id, true)
					}
				})
			}
			rebuilder.Go(func() {
				for n := 0; !stop.Load(); n++ {
					lazy := func(yield func(string, error) bool) {
						for id, err := range src.ids(ctx) {
							if !yield(id, err) {
								return
							}
						}
					}
					if err := m.Rebuild(ctx, plan, lazy); err != nil {
						t.Error(err)
						return
					}
					committed.Range(func(k, _ any) bool {
						if ok, _ := m.Test(ctx, k.(string)); !ok {
							t.Errorf("rebuild %d: committed %s missing", n, k)
							return false
						}
						return true
					})
				}
			})
			writers.Wait()
			stop.Store(true)
			rebuilder.Wait()
		})
	}
}
