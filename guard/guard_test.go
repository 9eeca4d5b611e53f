package guard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestGetAnswers(t *testing.T) {
	src := newSource(1000)
	g := newGuard(t, src.options(nil))
	ctx := context.Background()
	for _, id := range []string{"row0", "row999", "row500"} {
		v, err := g.Get(ctx, id)
		if err != nil || v != "value of "+id {
			t.Fatalf("Get(%q) = %q, %v", id, v, err)
		}
	}
	if n := src.loads.Load(); n != 3 {
		t.Fatalf("%d loads for three first Gets, want 3", n)
	}
	if _, err := g.Get(ctx, "row0"); err != nil || src.loads.Load() != 3 {
		t.Fatalf("cached Get: %v, loads %d", err, src.loads.Load())
	}
	before := src.loads.Load()
	absent := absentIDs(20000)
	for _, id := range absent {
		if _, err := g.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) = %v, want ErrNotFound", id, err)
		}
	}
	fp := src.loads.Load() - before
	// Headroom 2 at p = 0.01: the rate at half capacity is far below p.
	if fp > int64(0.01*float64(len(absent))) {
		t.Fatalf("%d loads for %d absent IDs", fp, len(absent))
	}
	// Repeating the attack costs nothing more: the false positives are in
	// the negative cache.
	for _, id := range absent {
		g.Get(ctx, id)
	}
	if again := src.loads.Load() - before - fp; again != 0 {
		t.Fatalf("repeated attack cost %d loads", again)
	}
	s := g.Stats()
	if s.Requests != 4+2*20000 || s.FalsePositives != uint64(fp) || s.NegativeHits != uint64(fp) || s.CacheHits != 1 {
		t.Fatalf("stats %+v (false positives %d)", s, fp)
	}
	if s.Absent != 2*20000-2*uint64(fp) || s.Rebuilds != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSingleflightCollapse(t *testing.T) {
	src := newSource(10)
	src.gate = make(chan struct{})
	g := newGuard(t, src.options(nil))
	const callers = 64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			v, err := g.Get(context.Background(), "row3")
			if err == nil && v != "value of row3" {
				err = errors.New("wrong value " + v)
			}
			errs <- err
		})
	}
	for g.flight.waiting("row3") != callers-1 {
		time.Sleep(time.Millisecond)
	}
	close(src.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := src.loads.Load(); n != 1 {
		t.Fatalf("%d loads for %d concurrent Gets, want 1", n, callers)
	}
	if s := g.Stats(); s.Loads != 1 || s.Joined != callers-1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestCallerCancelDoesNotFailOthers(t *testing.T) {
	src := newSource(10)
	src.gate = make(chan struct{})
	g := newGuard(t, src.options(nil))
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := g.Get(ctx, "row1"); first <- err }()
	for g.flight.waiting("row1") < 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() { _, err := g.Get(context.Background(), "row1"); second <- err }()
	for g.flight.waiting("row1") != 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled caller got %v", err)
	}
	close(src.gate)
	if err := <-second; err != nil {
		t.Fatalf("other caller got %v", err)
	}
}

func TestWriteThenGet(t *testing.T) {
	src := newSource(100)
	g := newGuard(t, src.options(nil))
	ctx := context.Background()
	// Probe first, so the negative cache could hold the ID if writes did
	// not invalidate it.
	for _, id := range absentIDs(5000) {
		g.Get(ctx, id)
	}
	for i, id := range absentIDs(5000) {
		if err := writeRow(ctx, g, src, id, i); err != nil {
			t.Fatal(err)
		}
		if v, err := g.Get(ctx, id); err != nil || v != "value of "+id {
			t.Fatalf("Get(%q) after writing it = %q, %v", id, v, err)
		}
	}
	if s := g.Stats(); s.Added != 5000 {
		t.Fatalf("stats %+v", s)
	}
}

func TestWriteErrorPassesThrough(t *testing.T) {
	src := newSource(10)
	g := newGuard(t, src.options(nil))
	boom := errors.New("constraint violated")
	if err := g.Write(context.Background(), "x", func(context.Context) error { return boom }); err != boom {
		t.Fatalf("Write = %v, want the write's own error", err)
	}
	if err := g.Write(context.Background(), "x", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Write(nil) = %v", err)
	}
}

func TestNegativeEntryNotStoredAcrossWrite(t *testing.T) {
	src := newSource(10)
	src.gate = make(chan struct{})
	g := newGuard(t, src.options(nil))
	ctx := context.Background()
	id := "new1"
	// A load of id that finds nothing is under way (the filter let it
	// through: add id to the filter first, as a false positive)...
	if err := g.m.Add(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() { _, err := g.Get(ctx, id); res <- err }()
	for g.flight.waiting(id) < 0 {
		time.Sleep(time.Millisecond)
	}
	// ...when id is written: the load's "not found" must not be cached.
	if err := g.Write(ctx, id, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	close(src.gate)
	if err := <-res; !errors.Is(err, ErrNotFound) {
		t.Fatalf("in-flight Get = %v", err)
	}
	src.insert(id)
	if _, err := g.Get(ctx, id); err != nil {
		t.Fatalf("Get after the write committed = %v", err)
	}
}

func TestLoadErrorNotCached(t *testing.T) {
	fail := true
	boom := errors.New("database down")
	var mu sync.Mutex
	o := &Options[string]{
		Load: func(ctx context.Context, id string) (string, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return "", false, boom
			}
			return "v", true, nil
		},
		IDs: newSource(0).ids, Membership: NewMemory(),
	}
	g := newGuard(t, o)
	ctx := context.Background()
	g.Added(ctx, "a")
	if _, err := g.Get(ctx, "a"); !errors.Is(err, boom) {
		t.Fatalf("Get = %v, want the loader's error", err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	if v, err := g.Get(ctx, "a"); err != nil || v != "v" {
		t.Fatalf("Get after recovery = %q, %v", v, err)
	}
	if s := g.Stats(); s.LoadErrors != 1 || s.Loads != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestOptionsInvalid(t *testing.T) {
	load := newSource(0).load
	for _, o := range []*Options[string]{
		nil,
		{},
		{Load: load, FalsePositiveRate: 1},
		{Load: load, FalsePositiveRate: -0.1},
		{Load: load, Headroom: 0.5},
		{Load: load, CacheTTL: -1},
		{Load: load, NegativeSize: -1},
		{Load: load, RebuildEvery: time.Second},
		{Load: load}, // an empty in-process membership needs IDs
	} {
		if _, err := New(context.Background(), o); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", o, err)
		}
	}
}

func TestRebuildAfterClose(t *testing.T) {
	g := newGuard(t, newSource(10).options(nil))
	g.Close()
	if err := g.Rebuild(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Rebuild after Close = %v", err)
	}
	if _, err := g.Get(context.Background(), "row1"); err != nil {
		t.Fatalf("Get after Close = %v", err)
	}
}
