package guard

import (
	"context"
	"iter"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// source is a source of truth for tests: rows in a map, a count of loads,
// and an ID iterator that reads a consistent snapshot as a database does.
type source struct {
	mu    sync.RWMutex
	rows  map[string]string
	loads atomic.Int64
	gate  chan struct{} // if set, each load waits for it
}

func newSource(n int) *source {
	s := &source{rows: make(map[string]string, n)}
	for i := range n {
		id := "row" + strconv.Itoa(i)
		s.rows[id] = "value of " + id
	}
	return s
}

func (s *source) load(ctx context.Context, id string) (string, bool, error) {
	s.loads.Add(1)
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
	}
	s.mu.RLock()
	v, ok := s.rows[id]
	s.mu.RUnlock()
	return v, ok, nil
}

func (s *source) insert(id string) {
	s.mu.Lock()
	s.rows[id] = "value of " + id
	s.mu.Unlock()
}

func (s *source) delete(id string) {
	s.mu.Lock()
	delete(s.rows, id)
	s.mu.Unlock()
}

func (s *source) count(context.Context) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return uint64(len(s.rows)), nil
}

func (s *source) ids(context.Context) iter.Seq2[string, error] {
	s.mu.RLock()
	snap := make([]string, 0, len(s.rows))
	for id := range s.rows {
		snap = append(snap, id)
	}
	s.mu.RUnlock()
	slices.Sort(snap)
	return func(yield func(string, error) bool) {
		for _, id := range snap {
			if !yield(id, nil) {
				return
			}
		}
	}
}

func (s *source) options(m Membership) *Options[string] {
	return &Options[string]{
		Load: s.load, IDs: s.ids, Count: s.count, Membership: m,
		CommitWindow: 20 * time.Millisecond,
	}
}

func newGuard(t testing.TB, o *Options[string]) *Guard[string] {
	t.Helper()
	g, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// absentIDs returns n IDs no source row has.
func absentIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "absent" + strconv.Itoa(i)
	}
	return out
}

// writeRow creates row id through g, by Write (even i) or by Added and
// then the insert (odd i), the two ways a service reports a write.
func writeRow(ctx context.Context, g *Guard[string], src *source, id string, i int) error {
	if i%2 == 0 {
		return g.Write(ctx, id, func(context.Context) error { src.insert(id); return nil })
	}
	if err := g.Added(ctx, id); err != nil {
		return err
	}
	src.insert(id)
	return nil
}
