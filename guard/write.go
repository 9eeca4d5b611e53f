package guard

import (
	"context"
	"fmt"
	"time"
)

// Added records that id now exists: call it before the write of id to
// the source commits, and commit within Options.CommitWindow of calling
// it, or use Write, which does both in order. It adds id to the filter and forgets
// any negative-cache entry for it. If Added fails the filter may lack id:
// do not commit the write.
func (g *Guard[V]) Added(ctx context.Context, id string) error {
	b := g.bucket(id)
	b.version.Add(1)
	err := g.m.Add(ctx, id, nil)
	b.lastBare.Store(monoNow())
	if err != nil {
		return fmt.Errorf("guard: add %q: %w", id, err)
	}
	g.c.shard().added.Add(1)
	return nil
}

// Write runs write, the caller's write of a new id to the source (an
// INSERT, a transaction), after adding id to the filter, and returns
// write's error. A rebuild that starts meanwhile waits for write to
// return (in this process; with a shared membership write's context ends
// at CommitWindow, so that other processes' rebuilds can wait for it).
// If adding id fails, write is not run and the error is returned.
func (g *Guard[V]) Write(ctx context.Context, id string, write func(ctx context.Context) error) error {
	if write == nil {
		return fmt.Errorf("%w: Write with a nil function", ErrInvalid)
	}
	b := g.bucket(id)
	b.version.Add(1)
	defer b.version.Add(1) // loads that ran during the write store nothing
	ran := false
	// The window runs from before the add: a rebuild elsewhere that this
	// add did not see waits CommitWindow from a moment after it.
	deadline := time.Now().Add(g.opt.CommitWindow)
	err := g.m.Add(ctx, id, func(ctx context.Context) error {
		ran = true
		g.c.shard().added.Add(1)
		if g.shared != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		return write(ctx)
	})
	if err != nil && !ran {
		return fmt.Errorf("guard: add %q: %w", id, err)
	}
	return err
}

// Removed records that id no longer exists: call it right after its
// deletion from the source commits (within Options.CommitWindow). It
// drops id's cached value and, if the membership can delete (a Deleter),
// deletes id from the filter; otherwise id stays a false positive until
// the next Rebuild, answered by one load and then the negative cache.
// Call it once per deletion of an ID that existed: deleting what a
// counting or cuckoo filter does not hold can delete another ID's trace.
func (g *Guard[V]) Removed(ctx context.Context, id string) error {
	b := g.bucket(id)
	b.version.Add(1)
	if err := g.cache.Delete(ctx, id); err != nil {
		return fmt.Errorf("guard: uncache %q: %w", id, err)
	}
	d, ok := g.m.(Deleter)
	if !ok {
		return nil
	}
	deleted, err := d.Remove(ctx, id)
	if err != nil {
		return fmt.Errorf("guard: remove %q: %w", id, err)
	}
	if deleted {
		g.c.shard().removed.Add(1)
	}
	return nil
}
