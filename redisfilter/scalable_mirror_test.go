package redisfilter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/bloomery/bloom"
)

// mustAllFound fails unless s finds every item of the batches.
func mustAllFound(t *testing.T, s *Scalable, batches ...[][]byte) {
	t.Helper()
	for _, batch := range batches {
		allPresent(t, s, batch)
	}
}

// TestMirroredWritesAnswerAsSerial: a Scalable with a copy answers every
// batch (repeats within and across batches, items in older sub-filters,
// growth) as one without, leaves the same bits and counts in Redis, and
// once its copy is loaded sends no read and no WATCH: one transaction a
// batch.
func TestMirroredWritesAnswerAsSerial(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	budget := NewMirrors(64 << 20)
	for _, tc := range []struct {
		name   string
		n0     uint64
		g      bloom.Growth
		layout bloom.Layout
	}{
		{"one", 100000, bloom.Growth{}, bloom.Blocked},
		{"grows", 300, bloom.Growth{Expansion: 2}, bloom.Blocked},
		{"classic", 300, bloom.Growth{Expansion: 2}, bloom.Classic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustCreateScalable(t, c, "m-"+tc.name, tc.n0, 0.001, tc.g, WithMirrors(budget), WithLayout(tc.layout))
			plain := mustCreateScalable(t, c, "p-"+tc.name, tc.n0, 0.001, tc.g, WithLayout(tc.layout))
			var all [][]byte
			for round := range 12 {
				batch := items(fmt.Sprint("r", round, "-"), 0, 150)
				batch = append(batch, batch[:20]...)                                             // repeats within the batch
				batch = append(batch, items(fmt.Sprint("r", max(round-1, 0), "-"), 100, 130)...) // and across
				got, err := m.AddMany(ctx, batch)
				if err != nil {
					t.Fatal(err)
				}
				want, err := plain.AddMany(ctx, batch)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("round %d: mirrored answers differ from a plain client's (%d new against %d)",
						round, count(got), count(want))
				}
				all = append(all, batch...)
			}
			mi, err := m.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pi, err := plain.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if mi.ScalableInfo != pi.ScalableInfo {
				t.Fatalf("counters %+v, a plain client's %+v", mi.ScalableInfo, pi.ScalableInfo)
			}
			for i := range mi.Subs {
				a, err := c.Get(ctx, mi.Subs[i].Key).Bytes()
				if err != nil {
					t.Fatal(err)
				}
				b, err := c.Get(ctx, pi.Subs[i].Key).Bytes()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(append(a, make([]byte, max(0, len(b)-len(a)))...), append(b, make([]byte, max(0, len(a)-len(b)))...)) {
					t.Fatalf("sub-filter %d: the mirrored writes left other bits than a plain client's", i)
				}
			}
			mustAllFound(t, m, all)

			if !m.mirrorView(m.view()) {
				t.Fatal("no copy after the batches")
			}
			before := commandCalls(t, c)
			if _, err := m.AddMany(ctx, items("after", 0, 100)); err != nil {
				t.Fatal(err)
			}
			after := commandCalls(t, c)
			for _, cmd := range []string{"getrange", "watch", "bitfield", "bitfield_ro", "evalsha"} {
				if d := after[cmd] - before[cmd]; d != 0 {
					t.Errorf("%d %s for a batch with the copy loaded, want 0", d, cmd)
				}
			}
			if d := after["exec"] - before["exec"]; d != 1 {
				t.Errorf("%d EXEC for one batch, want 1", d)
			}
		})
	}
	if budget.Stats().Loads == 0 {
		t.Fatal("no copy was loaded")
	}
}

// TestMirrorSeesOtherWriters: whatever way another client writes the
// filter (a watched write, a gated write, the script), the copy's next
// write is refused by the gate and the batch goes as a watched write:
// no item of either client is lost.
func TestMirrorSeesOtherWriters(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	for _, way := range []string{"watched", "gated", "script"} {
		t.Run(way, func(t *testing.T) {
			budget := NewMirrors(64 << 20)
			name := "others-" + way
			s := mustCreateScalable(t, c, name, 200000, 0.001, bloom.Growth{}, WithMirrors(budget))
			mine := items("mine-", 0, 300)
			if _, err := s.AddMany(ctx, mine); err != nil {
				t.Fatal(err)
			}
			if budget.Stats().Loads != 1 {
				t.Fatalf("%d copies loaded, want 1", budget.Stats().Loads)
			}
			o, err := OpenScalable(ctx, c, name)
			if err != nil {
				t.Fatal(err)
			}
			theirs := items("theirs-", 0, 300)
			switch way {
			case "gated":
				o.watchOff.Store(1 << 62)
			case "script":
				theirs = theirs[:1] // fewer than gatedMinItems: the script
			}
			if _, err := o.AddMany(ctx, theirs); err != nil {
				t.Fatal(err)
			}
			more := items("more-", 0, 300)
			got, err := s.AddMany(ctx, more)
			if err != nil {
				t.Fatal(err)
			}
			if n := count(got); n < 295 {
				t.Errorf("%d of 300 new items answered new", n)
			}
			if st := budget.Stats(); st.Conflicts != 1 || st.Bytes != 0 {
				t.Errorf("stats %+v after another client's write, want one conflict and the copy dropped", st)
			}
			mustAllFound(t, s, mine, theirs, more)
			mustAllFound(t, o, mine, theirs, more)
		})
	}
}

// TestMirrorAfterLostWrites: a Redis that lost the copy's last write (a
// failover to a replica behind, made here by putting back the keys as
// they were before it) holds the token from before. A counter would come
// back to the copy's value after one more write by another client, and
// the copy would then write back blocks without that client's bits. The
// tokens are unique, so the gate refuses: nothing is lost, and the lost
// items, added again, are answered new and stored.
func TestMirrorAfterLostWrites(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	budget := NewMirrors(64 << 20)
	s := mustCreateScalable(t, c, "lost", 200000, 0.001, bloom.Growth{}, WithMirrors(budget))
	if _, err := s.AddMany(ctx, items("first-", 0, 200)); err != nil {
		t.Fatal(err)
	}
	sub := s.view().subKey(0)
	saved := map[string]string{}
	for _, k := range []string{"lost", sub} {
		d, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		saved[k] = d
	}
	lostItems := items("lost-", 0, 200)
	if _, err := s.AddMany(ctx, lostItems); err != nil {
		t.Fatal(err)
	}
	for k, d := range saved { // the failover: back to before the write
		if err := c.RestoreReplace(ctx, k, 0, d).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// All in the copy, none in Redis: added again, they must be new.
	again, err := s.AddMany(ctx, lostItems)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(again); n < 195 {
		t.Fatalf("%d of 200 items lost in the failover answered new, want all", n)
	}
	mustAllFound(t, s, lostItems)

	// Once more, with another client's write after the loss (a new
	// filter: the copy above is paused after its conflict).
	s = mustCreateScalable(t, c, "lost2", 200000, 0.001, bloom.Growth{}, WithMirrors(budget))
	if _, err := s.AddMany(ctx, items("second-", 0, 200)); err != nil {
		t.Fatal(err)
	}
	sub = s.view().subKey(0)
	saved = map[string]string{"lost2": "", sub: ""}
	for k := range saved {
		d, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		saved[k] = d
	}
	if _, err := s.AddMany(ctx, items("lost2-", 0, 200)); err != nil {
		t.Fatal(err)
	}
	for k, d := range saved {
		if err := c.RestoreReplace(ctx, k, 0, d).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if !s.mirrorView(s.view()) {
		t.Fatal("no copy before the second loss")
	}
	o, err := OpenScalable(ctx, c, "lost2")
	if err != nil {
		t.Fatal(err)
	}
	theirs := items("theirs-", 0, 2000)
	if _, err := o.AddMany(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMany(ctx, items("third-", 0, 200)); err != nil {
		t.Fatal(err)
	}
	mustAllFound(t, o, theirs, items("third-", 0, 200), items("second-", 0, 200))
}

// TestMirroredWritersTogether: clients with copies and clients without
// add to one filter at once; afterwards every item is found and the
// count is at most the items added (RedisBloom's count of new items).
func TestMirroredWritersTogether(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	mustCreateScalable(t, c, "together", 20000, 0.001, bloom.Growth{Expansion: 2})
	const writers, batches, per = 4, 30, 60
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		var opts []Option
		if w%2 == 0 {
			opts = append(opts, WithMirrors(NewMirrors(64<<20)))
		}
		s, err := OpenScalable(ctx, c, "together", opts...)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if _, err := s.AddMany(ctx, items(fmt.Sprint("w", w, "b", b, "-"), 0, per)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := OpenScalable(ctx, c, "together")
	if err != nil {
		t.Fatal(err)
	}
	for w := range writers {
		for b := range batches {
			mustAllFound(t, s, items(fmt.Sprint("w", w, "b", b, "-"), 0, per))
		}
	}
	n, err := s.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n > writers*batches*per || n < writers*batches*per*99/100 {
		t.Fatalf("count %d for %d distinct items", n, writers*batches*per)
	}
}

// TestMirroredWritesInFlight: goroutines adding to one Scalable with a
// copy merge while the write before theirs is in flight, and send after
// it; an item added by several at once is new to exactly one, none is
// lost, and the count is the new answers. Then another client writes
// meanwhile: the write it overtakes is refused, the writes chained on it
// send nothing, and all go again as watched writes.
func TestMirroredWritesInFlight(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	budget := NewMirrors(64 << 20)
	s := mustCreateScalable(t, c, "inflight", 400000, 0.0001, bloom.Growth{}, WithMirrors(budget))
	warm, err := s.AddMany(ctx, items("warm-", 0, 50)) // loads the copy
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	newTo := map[string]int{}
	added, others := count(warm), 0
	run := func(phase string, other *Scalable) {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for b := range 40 {
					batch := items(fmt.Sprint(phase, g, "-", b, "-"), 0, 80)
					batch = append(batch, items(fmt.Sprint(phase, "shared-", b, "-"), 0, 20)...)
					got, err := s.AddMany(ctx, batch)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for i, a := range got {
						if a {
							newTo[string(batch[i])]++
						}
					}
					mu.Unlock()
					// All present: answered from the copy once the token
					// says so, while later writes of ours go through.
					again, err := s.AddMany(ctx, batch[:80])
					if err != nil {
						t.Error(err)
						return
					}
					if n := count(again); n != 0 {
						t.Errorf("%d items of a batch added again answered new", n)
					}
				}
			})
		}
		if other != nil {
			wg.Go(func() {
				for b := range 40 {
					got, err := other.AddMany(ctx, items(fmt.Sprint(phase, "other-", b, "-"), 0, 50))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					others += count(got)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		distinct := 4*40*80 + 40*20
		for g := range 4 {
			for b := range 40 {
				mustAllFound(t, s, items(fmt.Sprint(phase, g, "-", b, "-"), 0, 80))
			}
		}
		for b := range 40 {
			mustAllFound(t, s, items(fmt.Sprint(phase, "shared-", b, "-"), 0, 20))
		}
		n := 0
		for item, times := range newTo {
			if times > 1 {
				t.Fatalf("%s was new to %d writes", item, times)
			}
			n += times
		}
		if n < distinct*99/100 {
			t.Fatalf("%s: %d items answered new of %d distinct", phase, n, distinct)
		}
		added += n
		clear(newTo)
	}
	run("a", nil)
	if st := budget.Stats(); st.Chained == 0 || st.Conflicts != 0 {
		t.Fatalf("stats %+v with no other client: want writes chained and no conflict", st)
	}
	o, err := OpenScalable(ctx, c, "inflight")
	if err != nil {
		t.Fatal(err)
	}
	// The other client's writes overtake one of ours only when the
	// machine interleaves them so (a loaded machine under -race once ran
	// a whole phase without): run phases until one has, up to ten.
	for i := 0; budget.Stats().Conflicts == 0; i++ {
		if i == 10 {
			t.Fatal("another client's writes met no mirrored write in 10 phases")
		}
		run(fmt.Sprint("b", i), o)
	}
	n, err := s.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(added + others); n != want {
		t.Fatalf("count %d, but %d items were answered new", n, want)
	}
}

// TestMirrorBudget: a filter larger than what is left of the budget gets
// no copy (and is written as before); DropMirror gives the bytes back;
// a filter without a token (made by an older version) gets none.
func TestMirrorBudget(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	small := mustCreateScalable(t, c, "small", 100000, 0.01, bloom.Growth{})
	size := int64(small.view().bytes())
	budget := NewMirrors(size + size/2)
	a, err := OpenScalable(ctx, c, "small", WithMirrors(budget))
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenScalable(ctx, c, "small", WithMirrors(budget))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddMany(ctx, items("a-", 0, 100)); err != nil {
		t.Fatal(err)
	}
	if got := budget.Stats().Bytes; got != size {
		t.Fatalf("budget holds %d bytes, want the copy's %d", got, size)
	}
	if _, err := b.AddMany(ctx, items("b-", 0, 100)); err != nil {
		t.Fatal(err)
	}
	if b.mirrorView(b.view()) || budget.Stats().Loads != 1 {
		t.Fatal("a second copy was loaded beyond the budget")
	}
	a.DropMirror()
	if got := budget.Stats().Bytes; got != 0 {
		t.Fatalf("budget holds %d bytes after DropMirror", got)
	}
	mustAllFound(t, a, items("a-", 0, 100), items("b-", 0, 100))

	old := mustCreateScalable(t, c, "old", 100000, 0.01, bloom.Growth{})
	if err := c.HDel(ctx, "old", "writes").Err(); err != nil {
		t.Fatal(err)
	}
	o, err := OpenScalable(ctx, c, "old", WithMirrors(budget))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.AddMany(ctx, items("o-", 0, 100)); err != nil {
		t.Fatal(err)
	}
	if o.mirrorView(o.view()) {
		t.Fatal("a copy of a filter without a writes token")
	}
	if w, err := c.HExists(ctx, "old", "writes").Result(); err != nil || w {
		t.Fatalf("a write gave an old filter a token (%v, %v): older clients would refuse it", w, err)
	}
	mustAllFound(t, old, items("o-", 0, 100))
}

// TestMirrorDeletedAndMadeAgain: a batch whose items are all in the copy
// must not be answered from it once the filter was deleted and made
// again under the same name.
func TestMirrorDeletedAndMadeAgain(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	s := mustCreateScalable(t, c, "again", 100000, 0.01, bloom.Growth{}, WithMirrors(NewMirrors(64<<20)))
	batch := items("x-", 0, 100)
	if _, err := s.AddMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	o, err := OpenScalable(ctx, c, "again")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	mustCreateScalable(t, c, "again", 100000, 0.01, bloom.Growth{})
	got, err := s.AddMany(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(got); n != len(batch) {
		t.Fatalf("%d of %d items new in the filter made again, want all", n, len(batch))
	}
	mustAllFound(t, o, batch)
}

// TestMirroredBatchesSerial: two batches larger than a gated write's
// chunk (k = 14 here: gatedItems 585), added at once through one copy,
// each naming x and y in opposite order and far apart, answer as one
// serial order does: one of them finds both new, the other neither. A
// mirrored write merges a whole batch at once; in chunks, the other
// batch could merge between them and find x old and y new.
func TestMirroredBatchesSerial(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	s := mustCreateScalable(t, c, "serial", 1_000_000, 0.00005, bloom.Growth{}, WithMirrors(NewMirrors(64<<20)))
	if g := gatedItems(s.view()); g >= 1000 {
		t.Fatalf("gatedItems %d: the batches would not be split", g)
	}
	if _, err := s.AddMany(ctx, items("warm-", 0, 50)); err != nil {
		t.Fatal(err)
	}
	for round := range 40 {
		x, y := []byte(fmt.Sprint("x", round)), []byte(fmt.Sprint("y", round))
		p := append(append([][]byte{x}, items(fmt.Sprint("p", round, "-"), 0, 998)...), y)
		q := append(append([][]byte{y}, items(fmt.Sprint("q", round, "-"), 0, 998)...), x)
		var pa, qa []bool
		var wg sync.WaitGroup
		wg.Go(func() {
			var err error
			if pa, err = s.AddMany(ctx, p); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			var err error
			if qa, err = s.AddMany(ctx, q); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		if t.Failed() {
			return
		}
		px, py, qy, qx := pa[0], pa[len(pa)-1], qa[0], qa[len(qa)-1]
		if px != py || qx != qy || px == qx {
			t.Fatalf("round %d: x new to (p %v, q %v), y new to (p %v, q %v): no serial order", round, px, qx, py, qy)
		}
	}
}
