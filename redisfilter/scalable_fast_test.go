package redisfilter

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// Tests of gated and watched writes (scalable_fast.go,
// scalable_watch.go).

// writeModes are the ways AddMany writes a large batch: watched writes
// (falling back to gated ones on a conflict), or gated writes only.
var writeModes = []struct {
	name  string
	gated bool
}{{"watched", false}, {"gated", true}}

// setMode makes s write in mode gated or not.
func setMode(s *Scalable, gated bool) *Scalable {
	if gated {
		s.watchOff.Store(time.Now().Add(time.Hour).UnixNano())
	}
	return s
}

// staleCopy is a client of s's filter that keeps s's present view: it
// does not see what others do until a script or the gate refuses it.
func staleCopy(s *Scalable, gated bool) *Scalable {
	return setMode(&Scalable{client: s.client, name: s.name, maxBytes: DefaultMaxBytes, meta: s.view()}, gated)
}

// TestFastWriteRefusals: a gated or watched write from a client whose
// view is stale (the filter grew, was deleted, made again, or replaced by
// another type), or whose batch does not fit the last sub-filter, writes
// nothing: the bits, counts and time to live of the filter are as
// without it, no key is left behind, and AddMany answers as the add
// script would.
func TestFastWriteRefusals(t *testing.T) {
	for _, mode := range writeModes {
		t.Run(mode.name, func(t *testing.T) { checkRefusals(t, mode.gated) })
	}
}

func checkRefusals(t *testing.T, gated bool) {
	ctx := context.Background()
	_, c := newClient(t)
	batch := items("late", 0, 50)

	t.Run("grown", func(t *testing.T) {
		a := mustCreateScalable(t, c, "grown", 1000, 1e-6, bloom.Growth{})
		old := staleCopy(a, gated)
		if _, err := a.AddMany(ctx, items("a", 0, 1050)); err != nil { // grows: old has not seen it
			t.Fatal(err)
		}
		sub0 := c.Get(ctx, old.view().subKey(0)).Val()
		got, err := old.AddMany(ctx, append(items("a", 0, 10), batch...)) // refused, re-read, sent again
		if err != nil {
			t.Fatal(err)
		}
		for i, isNew := range got {
			if isNew != (i >= 10) {
				t.Fatalf("answer %d: %v", i, isNew)
			}
		}
		if c.Get(ctx, old.view().subKey(0)).Val() != sub0 {
			t.Error("the write reached the sub-filter that is no longer the last")
		}
		in := mustInfo(t, a)
		if in.Items != 1100 || in.Filters != 2 {
			t.Errorf("info %+v", in.ScalableInfo)
		}
		checkGrowth(t, in)
		allPresent(t, a, batch)
	})

	t.Run("no room", func(t *testing.T) {
		a := setMode(mustCreateScalable(t, c, "room", 1000, 1e-6, bloom.Growth{}), gated)
		if err := a.Expire(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := a.AddMany(ctx, items("a", 0, 990)); err != nil {
			t.Fatal(err)
		}
		a.view().lastFill.Store(0) // the hint is wrong: the gate decides
		if _, err := a.AddMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
		in := mustInfo(t, a)
		if in.Items != 1040 || in.Filters != 2 || in.Subs[0].Items != 1000 {
			t.Errorf("info %+v", in)
		}
		for _, k := range append([]string{"room"}, subKeys(in)...) {
			if ttl := c.PTTL(ctx, k).Val(); ttl < 59*time.Minute {
				t.Errorf("%s: ttl %v", k, ttl)
			}
		}
		if n := c.Exists(ctx, a.view().holdKey(), a.view().pendingKey()).Val(); n != 0 {
			t.Errorf("%d gate keys left", n)
		}
	})

	t.Run("deleted", func(t *testing.T) {
		before := c.DBSize(ctx).Val()
		a := mustCreateScalable(t, c, "deleted", 1000, 0.01, bloom.Growth{})
		old := staleCopy(a, gated)
		if err := a.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := old.AddMany(ctx, batch); !errors.Is(err, ErrNotFound) {
			t.Errorf("AddMany to a deleted filter: %v", err)
		}
		if n := c.DBSize(ctx).Val(); n != before {
			t.Errorf("%d keys left by a write to a deleted filter", n-before)
		}
	})

	t.Run("made again", func(t *testing.T) {
		a := mustCreateScalable(t, c, "again", 1000, 0.01, bloom.Growth{})
		old := staleCopy(a, gated)
		if err := a.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		b := mustCreateScalable(t, c, "again", 2000, 1e-6, bloom.Growth{})
		if _, err := old.AddMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if n := c.Exists(ctx, a.view().subKey(0)).Val(); n != 0 {
			t.Error("the write reached the deleted filter's sub-filter")
		}
		if in := mustInfo(t, b); in.Items != 50 {
			t.Errorf("the new filter counts %d", in.Items)
		}
		allPresent(t, b, batch)
	})

	t.Run("wrong type", func(t *testing.T) {
		a := mustCreateScalable(t, c, "replaced", 1000, 0.01, bloom.Growth{})
		old := staleCopy(a, gated)
		if err := a.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		c.Set(ctx, "replaced", "plain", 0)
		if _, err := old.AddMany(ctx, batch); !errors.Is(err, ErrMetadata) {
			t.Errorf("AddMany to a string: %v", err)
		}
		if v := c.Get(ctx, "replaced").Val(); v != "plain" || c.Exists(ctx, a.view().subKey(0)).Val() != 0 {
			t.Errorf("the string became %q, or a sub-filter was made", v)
		}
	})
}

// TestGatedOlderSubFilters: items already in a sub-filter before the last
// answer not new and are neither counted nor written into the last one.
func TestGatedOlderSubFilters(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	s := mustCreateScalable(t, c, "older", 100, 1e-6, bloom.Growth{})
	if _, err := s.AddMany(ctx, items("o", 0, 150)); err != nil {
		t.Fatal(err)
	}
	before := mustInfo(t, s)
	last := c.Get(ctx, before.Subs[1].Key).Val()
	got, err := s.AddMany(ctx, items("o", 0, 100)) // all in sub-filter 0
	if err != nil {
		t.Fatal(err)
	}
	for i, isNew := range got {
		if isNew {
			t.Fatalf("o%d answered new", i)
		}
	}
	if after := mustInfo(t, s); after.ScalableInfo != before.ScalableInfo || c.Get(ctx, before.Subs[1].Key).Val() != last {
		t.Errorf("re-adding changed the filter: %+v → %+v", before.ScalableInfo, after.ScalableInfo)
	}
}

// TestGatedBusy: where the add script would grow the filter, or find a
// non-scaling one full, while a reservation is pending, it waits until
// the reservation is released or its lease has run out; a reservation
// past its lease does not hold it up.
func TestGatedBusy(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	now := func() float64 {
		tm := c.Time(ctx).Val()
		return float64(tm.UnixMilli())
	}
	for _, tc := range []struct {
		name string
		so   bloom.Growth
	}{{"grows", bloom.Growth{}}, {"full", bloom.Growth{NonScaling: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCreateScalable(t, c, "busy-"+tc.name, 100, 0.01, tc.so)
			if _, err := s.AddMany(ctx, items("b", 0, 100)); err != nil {
				t.Fatal(err)
			}
			pending := s.view().pendingKey()
			c.ZAdd(ctx, pending, redis.Z{Score: now() - 1, Member: "expired"}, redis.Z{Score: now() + 3_600_000, Member: "held"})
			done := make(chan error, 1)
			go func() {
				_, err := s.Add(ctx, []byte("one more"))
				done <- err
			}()
			time.Sleep(100 * time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("Add returned while a reservation was pending: %v", err)
			default:
			}
			if in := mustInfo(t, s); in.Filters != 1 || in.Items != 100 {
				t.Fatalf("while busy: %+v", in.ScalableInfo)
			}
			c.ZRem(ctx, pending, "held")
			err := <-done
			in := mustInfo(t, s)
			if tc.so.NonScaling {
				if !errors.Is(err, bloom.ErrFull) || in.Items != 100 {
					t.Errorf("released: %v, %+v", err, in.ScalableInfo)
				}
			} else if err != nil || in.Filters != 2 || in.Items != 101 {
				t.Errorf("released: %v, %+v", err, in.ScalableInfo)
			}
			if n := c.Exists(ctx, pending).Val(); n != 0 {
				t.Error("the expired reservation was not dropped")
			}
		})
	}
}

// TestFastWritesConcurrentExact: clients adding overlapping items at
// once, in batches of every size (single adds take the script, larger
// ones watched writes, which abort each other and fall back to gated
// writes), through several growths: every item is new to exactly one
// client, the filter counts each once, every sub-filter before the last
// holds exactly its capacity, and nothing is lost. On one server and on a
// cluster; with watched writes tried for every batch (not paused after
// an abort), and with gated writes only.
func TestFastWritesConcurrentExact(t *testing.T) {
	srv, c := newClient(t)
	for _, mode := range writeModes {
		checkConcurrentExact(t, c, mode.gated, func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: srv.Addr()}) })
	}
	cl, cc := newCluster(t)
	checkConcurrentExact(t, cc, false, func() redis.UniversalClient { return redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()}) })
}

func checkConcurrentExact(t *testing.T, c redis.UniversalClient, gated bool, newClient func() redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	s := mustCreateScalable(t, c, "exact", 200, 1e-7, bloom.Growth{RedisBloom: true}) // no false positive among these items
	const writers, distinct = 6, 12_000
	newTo := make([]int, distinct)
	var mu sync.Mutex
	concurrently(t, writers, newClient, "exact", func(w int, ws *Scalable) error {
		rng := rand.New(rand.NewPCG(uint64(w), 9))
		for from := 0; from < distinct; {
			n := []int{1, 1, 7, 8, 50, 300, 1500}[rng.IntN(7)]
			idx := make([]int, 0, n)
			for i := from; i < min(from+n, distinct); i++ {
				idx = append(idx, i)
			}
			from += n
			rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
			batch := make([][]byte, len(idx))
			for i, x := range idx {
				batch[i] = []byte("e" + strconv.Itoa(x))
			}
			if !gated {
				ws.watchOff.Store(0)
			}
			got, err := setMode(ws, gated).AddMany(ctx, batch)
			if err != nil {
				return err
			}
			mu.Lock()
			for i, isNew := range got {
				if isNew {
					newTo[idx[i]]++
				}
			}
			mu.Unlock()
		}
		return nil
	})
	for i, n := range newTo {
		if n != 1 {
			t.Fatalf("e%d was new to %d clients", i, n)
		}
	}
	allPresent(t, s, items("e", 0, distinct))
	in := mustInfo(t, s)
	if in.Items != distinct || in.Filters < 5 {
		t.Errorf("%d items counted for %d distinct, %d sub-filters", in.Items, distinct, in.Filters)
	}
	checkGrowth(t, in)
	if one, ok := c.(*redis.Client); ok && !gated { // the first run on this server
		calls := commandCalls(t, one) // a gate's reservation is a ZADD
		if calls["watch"] == 0 || calls["zadd"] == 0 {
			t.Errorf("watched writes falling back to gated ones: %d WATCH, %d reservations", calls["watch"], calls["zadd"])
		}
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFastWritesConcurrentFPR: clients adding at once keep the compound
// false-positive rate within its target, measured on items never added.
func TestFastWritesConcurrentFPR(t *testing.T) {
	ctx := context.Background()
	srv, c := newClient(t)
	const p, writers, per = 0.01, 4, 10_000
	s := mustCreateScalable(t, c, "cfpr", 1000, p, bloom.Growth{RedisBloom: true})
	newClient := func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: srv.Addr()}) }
	concurrently(t, writers, newClient, "cfpr", func(w int, ws *Scalable) error {
		for from := 0; from < per; from += 250 {
			if _, err := ws.AddMany(ctx, items("w"+strconv.Itoa(w)+":", from, from+250)); err != nil {
				return err
			}
		}
		return nil
	})
	for w := range writers {
		allPresent(t, s, items("w"+strconv.Itoa(w)+":", 0, per))
	}
	checkRate(t, s, p, items("never", 0, 100_000))
}
