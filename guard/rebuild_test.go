package guard

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// A rebuild that starts while a Write's commit runs must not read the
// source before that commit returns: the new filter would lack the row.
func TestRebuildWaitsForWriteInFlight(t *testing.T) {
	src := newSource(100)
	o := src.options(nil)
	var committed, readEarly atomic.Bool
	o.IDs = func(ctx context.Context) iter.Seq2[string, error] {
		if !committed.Load() {
			readEarly.Store(true)
		}
		return src.ids(ctx)
	}
	g := newGuard(t, o)
	readEarly.Store(false) // New's first fill
	ctx := context.Background()
	release := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		wrote <- g.Write(ctx, "late", func(context.Context) error {
			<-release
			src.insert("late")
			committed.Store(true)
			return nil
		})
	}()
	for g.Stats().Added == 0 {
		time.Sleep(time.Millisecond)
	}
	rebuilt := make(chan error, 1)
	go func() { rebuilt <- g.Rebuild(ctx) }()
	time.Sleep(100 * time.Millisecond)
	close(release)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := <-rebuilt; err != nil {
		t.Fatal(err)
	}
	if readEarly.Load() {
		t.Fatal("the rebuild read the source while a write was in flight")
	}
	if ok, _ := g.m.Test(ctx, "late"); !ok {
		t.Fatal("the rebuilt filter lacks the row written during the rebuild")
	}
}

// After Added (no commit function) the rebuild waits CommitWindow.
func TestRebuildWaitsCommitWindowAfterAdded(t *testing.T) {
	src := newSource(10)
	o := src.options(nil)
	o.CommitWindow = 300 * time.Millisecond
	g := newGuard(t, o)
	ctx := context.Background()
	if err := g.Added(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := g.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("rebuild took %v after an Added, want it to wait the commit window", d)
	}
}

func TestRebuildShedsDeleted(t *testing.T) {
	src := newSource(20000)
	g := newGuard(t, src.options(nil))
	ctx := context.Background()
	for i := range 10000 {
		src.delete("row" + strconv.Itoa(i))
	}
	if err := g.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	before := src.loads.Load()
	for i := range 10000 {
		if _, err := g.Get(ctx, "row"+strconv.Itoa(i)); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	// Sized for 2 × 10,000 at p = 0.01, holding 10,000.
	if n := src.loads.Load() - before; n > 100 {
		t.Fatalf("%d loads for 10,000 deleted IDs after a rebuild", n)
	}
	if s := g.Stats(); s.Rebuilds != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestRebuildErrorKeepsFilter(t *testing.T) {
	src := newSource(1000)
	o := src.options(nil)
	boom := errors.New("cursor lost")
	var fail atomic.Bool
	o.IDs = func(ctx context.Context) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			for id, err := range src.ids(ctx) {
				if fail.Load() && id == "row500" {
					yield("", boom)
					return
				}
				if !yield(id, err) {
					return
				}
			}
		}
	}
	g := newGuard(t, o)
	fail.Store(true)
	if err := g.Rebuild(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Rebuild = %v", err)
	}
	for i := range 1000 {
		if ok, _ := g.m.Test(context.Background(), "row"+strconv.Itoa(i)); !ok {
			t.Fatalf("row%d lost after a failed rebuild", i)
		}
	}
	if s := g.Stats(); s.RebuildErrors != 1 || s.Rebuilds != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestRebuildEvery(t *testing.T) {
	src := newSource(100)
	o := src.options(nil)
	o.RebuildEvery = 10 * time.Millisecond
	g := newGuard(t, o)
	for g.Stats().Rebuilds < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	g.Close()
	n := g.Stats().Rebuilds
	time.Sleep(50 * time.Millisecond)
	if g.Stats().Rebuilds != n {
		t.Fatal("rebuilds went on after Close")
	}
}

func TestCountByIterating(t *testing.T) {
	src := newSource(5000)
	o := src.options(nil)
	o.Count = nil
	g := newGuard(t, o)
	gen := g.m.(*Memory).cur.Load()
	if c := gen.set.(filterSet).f.Cap(); c != 10000 {
		t.Fatalf("capacity %d for 5000 IDs with headroom 2", c)
	}
}
