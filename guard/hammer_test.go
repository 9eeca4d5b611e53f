package guard

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hammer is the proof of the guard's promise: writers add rows (half
// through Write, half through Added then the insert), readers Get rows
// whose write has returned, a rebuilder rebuilds the filter over and
// over, and, with deletes, a deleter removes rows; no Get of a row that
// existed for the whole call may answer ErrNotFound.
type hammer struct {
	writers, perWriter, readers int
	minRebuilds                 int  // rebuilds that must complete under load
	deletes                     bool // delete some rows too (Removed)
	writeOnly                   bool // every row through Write, none through Added
}

// row states
const (
	rowWriting int32 = iota
	rowLive
	rowDeleted
)

// run hammers the guards gs, which share src (and, for a shared
// membership, the filter): writer w writes through gs[w%len(gs)], and so
// on, and the rebuilds go round the guards.
func (h hammer) run(t *testing.T, src *source, gs ...*Guard[string]) {
	t.Helper()
	ctx := context.Background()
	var (
		mu        sync.Mutex
		live      []string
		state     sync.Map // id → *atomic.Int32
		rebuilds  atomic.Int64
		reads     atomic.Int64
		falseNegs atomic.Int64
		stop      = make(chan struct{})
		failed    = make(chan error, 64)
	)
	fail := func(err error) {
		select {
		case failed <- err:
		default:
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	var writers sync.WaitGroup
	for w := range h.writers {
		g := gs[w%len(gs)]
		writers.Go(func() {
			for i := 0; i < h.perWriter || (rebuilds.Load() < int64(h.minRebuilds) && time.Now().Before(deadline)); i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				st := new(atomic.Int32)
				state.Store(id, st)
				way := i
				if h.writeOnly {
					way = 0
				}
				if err := writeRow(ctx, g, src, id, way); err != nil {
					fail(fmt.Errorf("write %s: %w", id, err))
					return
				}
				st.Store(rowLive)
				mu.Lock()
				live = append(live, id)
				mu.Unlock()
			}
		})
	}
	var others sync.WaitGroup
	for r := range h.readers {
		g := gs[(r+1)%len(gs)]
		others.Go(func() {
			r := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				n := len(live)
				var id string
				if n > 0 {
					id = live[r.IntN(n)]
				}
				mu.Unlock()
				if n == 0 {
					continue
				}
				v, _ := state.Load(id)
				st := v.(*atomic.Int32)
				if st.Load() != rowLive {
					continue
				}
				_, err := g.Get(ctx, id)
				reads.Add(1)
				if errors.Is(err, ErrNotFound) && st.Load() == rowLive {
					falseNegs.Add(1)
					inFilter, _ := g.m.Test(ctx, id)
					_, negative := g.neg.get(id)
					_, inSource, _ := src.load(ctx, id)
					fail(fmt.Errorf("%s: Get(%q) = ErrNotFound for an existing row (now: in the filter %v, negative entry %v, in the source %v)", t.Name(),
						id, inFilter, negative, inSource))
				} else if err != nil && !errors.Is(err, ErrNotFound) {
					fail(fmt.Errorf("Get(%q): %w", id, err))
				}
				// Absent IDs too: the attack traffic.
				g.Get(ctx, fmt.Sprintf("nope%d", r.IntN(1<<20)))
			}
		})
	}
	others.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := gs[i%len(gs)].Rebuild(ctx); err != nil {
				fail(fmt.Errorf("rebuild: %w", err))
				return
			}
			rebuilds.Add(1)
		}
	})
	if h.deletes {
		others.Go(func() {
			r := rand.New(rand.NewPCG(7, 7))
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				mu.Lock()
				if len(live) < 10 {
					mu.Unlock()
					continue
				}
				i := r.IntN(len(live))
				id := live[i]
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
				mu.Unlock()
				v, _ := state.Load(id)
				v.(*atomic.Int32).Store(rowDeleted)
				src.delete(id)
				if err := gs[0].Removed(ctx, id); err != nil {
					fail(fmt.Errorf("removed %s: %w", id, err))
					return
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	others.Wait()
	close(failed)
	for err := range failed {
		t.Error(err)
	}
	if n := rebuilds.Load(); n < int64(h.minRebuilds) {
		t.Errorf("%d rebuilds under load, want at least %d", n, h.minRebuilds)
	}
	t.Logf("%d reads of existing rows, %d rebuilds, %d false negatives", reads.Load(), rebuilds.Load(), falseNegs.Load())
	for _, g := range gs {
		t.Logf("stats %+v", g.Stats())
	}
}

// TestRaceNoFalseNegativeMemory hammers each in-process membership twice:
// with rows written only through Write, whose commits the rebuilds track
// exactly, and a CommitWindow of a millisecond (nothing else could
// save a row a rebuild missed); and with Added and deletes too, whose
// promise rests on the CommitWindow, given room for a busy machine.
func TestRaceNoFalseNegativeMemory(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    func() Membership
	}{
		{"filter", func() Membership { return NewMemory() }},
		{"scalable", func() Membership { return NewMemoryScalable() }},
		{"counting", func() Membership { return NewMemoryCounting() }},
	} {
		t.Run(tc.name+"/write", func(t *testing.T) {
			src := newSource(2000)
			o := src.options(tc.m())
			o.Headroom = 1.2 // small filters, so rebuilds resize
			o.CommitWindow = time.Millisecond
			g := newGuard(t, o)
			hammer{writers: 4, perWriter: 300, readers: 4, minRebuilds: 6, writeOnly: true}.run(t, src, g)
		})
		t.Run(tc.name+"/added-and-deletes", func(t *testing.T) {
			src := newSource(2000)
			o := src.options(tc.m())
			o.Headroom = 1.2
			o.CommitWindow = 250 * time.Millisecond
			g := newGuard(t, o)
			hammer{writers: 4, perWriter: 400, readers: 4, minRebuilds: 3, deletes: true}.run(t, src, g)
		})
	}
}
