package guard

import (
	"context"
	"errors"
	"strconv"
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
