package guard

import (
	"context"
	"fmt"
	"iter"
	"time"
)

// Rebuild replaces the filter with one built from Options.IDs, sized for
// Options.Count (or the IDs counted) times Headroom, and switches to it
// atomically: no ID that exists reads absent at any moment, IDs added
// while it runs are in the new filter too, and IDs deleted from the
// source are gone from it (no longer false positives). One Rebuild runs
// at a time per Guard; a shared membership also refuses one that another
// process runs (ErrRebuildRunning). On error the old filter stays.
func (g *Guard[V]) Rebuild(ctx context.Context) error {
	if g.closed.Load() {
		return ErrClosed
	}
	if g.opt.IDs == nil {
		return fmt.Errorf("%w: Rebuild needs Options.IDs", ErrInvalid)
	}
	g.rebuildMu.Lock()
	defer g.rebuildMu.Unlock()
	if err := g.rebuild(ctx); err != nil {
		g.c.shard().rebuildErrors.Add(1)
		return fmt.Errorf("guard: rebuild: %w", err)
	}
	g.c.shard().rebuilds.Add(1)
	return nil
}

func (g *Guard[V]) rebuild(ctx context.Context) error {
	n, err := g.count(ctx)
	if err != nil {
		return err
	}
	return g.m.Rebuild(ctx, g.opt.plan(n), g.ids(ctx))
}

// ids calls Options.IDs only when the membership starts reading, after it
// has announced the rebuild to writers, so that the source is read late
// enough to hold every write the rebuild did not see.
func (g *Guard[V]) ids(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for id, err := range g.opt.IDs(ctx) {
			if !yield(id, err) {
				return
			}
		}
	}
}

// count is Options.Count, or the IDs counted.
func (g *Guard[V]) count(ctx context.Context) (uint64, error) {
	if g.opt.Count != nil {
		n, err := g.opt.Count(ctx)
		if err != nil {
			return 0, fmt.Errorf("count: %w", err)
		}
		return n, nil
	}
	var n uint64
	for _, err := range g.opt.IDs(ctx) {
		if err != nil {
			return 0, fmt.Errorf("count: %w", err)
		}
		n++
	}
	return n, nil
}

// rebuildLoop rebuilds every RebuildEvery until ctx ends.
func (g *Guard[V]) rebuildLoop(ctx context.Context) {
	defer close(g.done)
	t := time.NewTicker(g.opt.RebuildEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.rebuildMu.Lock()
		err := g.rebuild(ctx)
		g.rebuildMu.Unlock()
		switch {
		case err == nil:
			g.c.shard().rebuilds.Add(1)
		case isCanceled(ctx, err):
			return
		default:
			g.c.shard().rebuildErrors.Add(1)
			g.report(fmt.Errorf("guard: background rebuild: %w", err))
		}
	}
}
