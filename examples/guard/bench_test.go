package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/bloomery/bloom/guard"
)

// BenchmarkAttack is the attack: 10⁶ random absent IDs against a
// SQLite table of 10⁶ rows, through a guard with a filter at p = 0.01
// (headroom 1, the filter's full rate) and through a cache with a
// negative cache alone (go-zero's placeholder approach). It reports the
// database queries per attack; one iteration is the whole attack:
//
//	go test -C examples -run '^$' -bench Attack -benchtime 1x ./guard
func BenchmarkAttack(b *testing.B) {
	const rows, attack, p = 1_000_000, 1_000_000, 0.01
	st := newStore(b, rows)
	for _, tc := range []struct {
		name string
		m    guard.Membership
	}{{"filter", nil}, {"negative-cache-alone", noFilter{}}} {
		b.Run(tc.name, func(b *testing.B) {
			g, err := guard.New(context.Background(), &guard.Options[User]{
				Load: st.load, IDs: st.ids, Count: st.count, Membership: tc.m,
				FalsePositiveRate: p, Headroom: 1,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			r := rand.New(rand.NewPCG(1, 2))
			var queries int64
			for b.Loop() {
				queries += attackQueries(b, g, st, attack, r)
			}
			b.ReportMetric(float64(queries)/float64(b.N), "queries")
			b.ReportMetric(float64(queries)/float64(b.N)/attack, "queries/request")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/attack, "ns/request")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkConcurrentMiss: 64 concurrent Gets of one ID that is not
// cached, a new ID each round; it reports the database queries per
// round (the bound: 1).
func BenchmarkConcurrentMiss(b *testing.B) {
	st := newStore(b, 100_000)
	g := newGuard(b, st, nil)
	ctx := context.Background()
	before := st.queries.Load()
	round := 0
	for b.Loop() {
		id := userID(round % 100_000)
		round++
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				<-start
				if _, err := g.Get(ctx, id); err != nil {
					b.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
	}
	b.ReportMetric(float64(st.queries.Load()-before)/float64(b.N), "queries/op")
}
