package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomery/bloom/guard"
)

// Writers insert rows into SQLite through the guard while readers Get
// rows whose insert has committed and a rebuilder rebuilds the filter
// from the table without pause: no committed row may read absent.
func TestSQLiteNoFalseNegativeUnderWritesAndRebuilds(t *testing.T) {
	st := newStore(t, 5000)
	g := newGuard(t, st, nil)
	ctx := context.Background()
	var (
		mu       sync.Mutex
		written  []string
		rebuilds atomic.Int64
		stop     = make(chan struct{})
		errs     = make(chan error, 16)
	)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var writers, others sync.WaitGroup
	// untilStopped runs step over and over, in a goroutine, until stop.
	untilStopped := func(step func() bool) {
		others.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !step() {
					return
				}
			}
		})
	}
	for w := range 3 {
		writers.Go(func() {
			for i := 0; i < 150 || rebuilds.Load() < 3; i++ {
				u := User{ID: fmt.Sprintf("new-%d-%d", w, i), Name: "new"}
				var err error
				if i%2 == 0 {
					err = g.Write(ctx, u.ID, func(ctx context.Context) error { return st.insert(ctx, u) })
				} else if err = g.Added(ctx, u.ID); err == nil {
					err = st.insert(ctx, u)
				}
				if err != nil {
					report(err)
					return
				}
				mu.Lock()
				written = append(written, u.ID)
				mu.Unlock()
			}
		})
	}
	for range 3 {
		untilStopped(func() bool {
			mu.Lock()
			n := len(written)
			id := userID(rand.IntN(5000))
			if n > 0 && rand.IntN(2) == 0 {
				id = written[rand.IntN(n)]
			}
			mu.Unlock()
			if _, err := g.Get(ctx, id); err != nil {
				report(fmt.Errorf("Get(%q) of a committed row: %w", id, err))
			}
			return true
		})
	}
	untilStopped(func() bool {
		if err := g.Rebuild(ctx); err != nil {
			report(err)
			return false
		}
		rebuilds.Add(1)
		return true
	})
	writers.Wait()
	close(stop)
	others.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d rebuilds; stats %+v", rebuilds.Load(), g.Stats())
}

// 64 concurrent requests for one ID that is not cached: one query, in
// each of 100 rounds (Gets that arrive as a load ends must not start
// another).
func TestSingleflightCountedAtTheDatabase(t *testing.T) {
	st := newStore(t, 1000)
	g := newGuard(t, st, nil)
	ctx := context.Background()
	for i := range 100 {
		id := userID(i * 7)
		before := st.queries.Load()
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				<-start
				if u, err := g.Get(ctx, id); err != nil || u.ID != id {
					t.Errorf("Get(%q) = %+v, %v", id, u, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if q := st.queries.Load() - before; q != 1 {
			t.Fatalf("%d queries for 64 concurrent Gets of %s, want 1", q, id)
		}
	}
}

// The attack of BenchmarkAttack, smaller (SQLite is slow under the race
// detector): random absent IDs cost the database at most 1.2·p queries
// each with the filter, and one each with a negative cache alone.
func TestAttackCost(t *testing.T) {
	const rows, p = 50_000, 0.01
	st := newStore(t, rows)
	for _, tc := range []struct {
		name   string
		m      guard.Membership
		attack int
		max    float64
	}{
		{"filter", nil, 20_000, 1.2 * p * 20_000},
		{"negative cache alone", noFilter{}, 3_000, 3_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := guard.New(context.Background(), &guard.Options[User]{
				Load: st.load, IDs: st.ids, Count: st.count, Membership: tc.m,
				FalsePositiveRate: p, Headroom: 1, // the filter's full rate: the bound holds without headroom
			})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			q := attackQueries(t, g, st, tc.attack, rand.New(rand.NewPCG(1, 2)))
			if float64(q) > tc.max {
				t.Fatalf("%d queries for %d absent IDs, want at most %.0f", q, tc.attack, tc.max)
			}
			if tc.m != nil && q != int64(tc.attack) {
				t.Fatalf("%d queries without the filter, want one per request", q)
			}
			t.Logf("%d queries for %d absent IDs", q, tc.attack)
		})
	}
}

// attackQueries sends n random absent IDs through g and returns the
// database queries they caused.
func attackQueries(t testing.TB, g *guard.Guard[User], st *store, n int, r *rand.Rand) int64 {
	ctx := context.Background()
	before := st.queries.Load()
	for range n {
		if _, err := g.Get(ctx, fmt.Sprintf("x%016x", r.Uint64())); !errors.Is(err, guard.ErrNotFound) {
			t.Fatalf("Get of an absent ID = %v", err)
		}
	}
	return st.queries.Load() - before
}

func TestRemovedWithCountingFilter(t *testing.T) {
	st := newStore(t, 100)
	g, err := guard.New(context.Background(), &guard.Options[User]{
		Load: st.load, IDs: st.ids, Count: st.count, Membership: guard.NewMemoryCounting(),
		CommitWindow: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	time.Sleep(20 * time.Millisecond) // past the commit window of the first fill
	ctx := context.Background()
	id := userID(3)
	if _, err := g.Get(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.delete(ctx, id); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := g.Removed(ctx, id); err != nil {
		t.Fatal(err)
	}
	before := st.queries.Load()
	if _, err := g.Get(ctx, id); !errors.Is(err, guard.ErrNotFound) {
		t.Fatalf("Get of a deleted row = %v", err)
	}
	if q := st.queries.Load() - before; q != 0 {
		t.Fatalf("%d queries for a row deleted from the counting filter", q)
	}
}
