package redisfilter

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// TestWatchedWritesReleaseTheWatch: a watched write sends its WATCH in
// the pipeline of its reads, out of go-redis's sight, so every way out
// that does not reach EXEC must release it; else the connection goes
// back to the pool still watching the sub-filter, and the next
// transaction on it aborts when anyone has written that key meanwhile.
// With one pooled connection: a batch of items all present (no write, no
// EXEC), another client's add to the same sub-filter, then a batch of new
// items must go as a watched write, not abort into gated writes.
func TestWatchedWritesReleaseTheWatch(t *testing.T) {
	ctx := context.Background()
	srv, _ := newClient(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 1})
	t.Cleanup(func() { c.Close() })
	other := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { other.Close() })

	s := mustCreateScalable(t, c, "watched", 100000, 0.001, bloom.Growth{})
	if s.view().subs[0].Layout != bloom.Blocked {
		t.Fatal("the filter is not blocked: no watched writes to test")
	}
	first := items("a", 0, 200)
	if _, err := s.AddMany(ctx, first); err != nil {
		t.Fatal(err)
	}
	before := commandCalls(t, other)
	again, err := s.AddMany(ctx, first) // nothing new: the write ends before MULTI
	if err != nil {
		t.Fatal(err)
	}
	for i, added := range again {
		if added {
			t.Fatalf("item %d added twice", i)
		}
	}
	after := commandCalls(t, other)
	if got := after["watch"] - before["watch"]; got != 1 {
		t.Errorf("%d WATCHes for one batch, want 1", got)
	}
	if got := after["unwatch"] - before["unwatch"]; got != 1 {
		t.Errorf("%d UNWATCHes after a batch with nothing to write, want 1", got)
	}
	if got := after["exec"] - before["exec"]; got != 0 {
		t.Errorf("%d EXECs for a batch with nothing to write", got)
	}

	o, err := OpenScalable(ctx, other, "watched")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.AddMany(ctx, items("b", 0, 200)); err != nil { // writes the sub-filter s read
		t.Fatal(err)
	}
	added, err := s.AddMany(ctx, items("c", 0, 200))
	if err != nil {
		t.Fatal(err)
	}
	if s.watchOff.Load() != 0 {
		t.Fatal("the watched write after another client's add aborted: a WATCH was left on the pooled connection")
	}
	n := 0
	for _, a := range added {
		if a {
			n++
		}
	}
	if n < 195 {
		t.Errorf("%d of 200 new items answered new", n)
	}
	for _, batch := range [][][]byte{first, items("b", 0, 200), items("c", 0, 200)} {
		found, err := s.ExistsMany(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range found {
			if !f {
				t.Fatalf("item %q lost", batch[i])
			}
		}
	}
}

// refuseMulti is a go-redis hook that, while on, fails every transaction
// before it is sent, as a circuit breaker or a limiter would.
type refuseMulti struct{ on atomic.Bool }

var errRefused = errors.New("refused by a hook")

func (h *refuseMulti) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *refuseMulti) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *refuseMulti) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.on.Load() && len(cmds) > 0 && cmds[0].Name() == "multi" {
			return errRefused
		}
		return next(ctx, cmds)
	}
}

// TestWatchedWriteFailingBeforeExec: a transaction that fails before
// EXEC is sent (here a hook refuses it) leaves the WATCH of its reads
// in force on the server, so the write must release it: the batch fails
// with the hook's error, and the next watched write on the same pooled
// connection, after another client's add, goes through.
func TestWatchedWriteFailingBeforeExec(t *testing.T) {
	ctx := context.Background()
	srv, _ := newClient(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 1})
	t.Cleanup(func() { c.Close() })
	hook := &refuseMulti{}
	c.AddHook(hook)
	other := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { other.Close() })

	s := mustCreateScalable(t, c, "refused", 100000, 0.001, bloom.Growth{})
	hook.on.Store(true)
	if _, err := s.AddMany(ctx, items("a", 0, 200)); !errors.Is(err, errRefused) {
		t.Fatalf("AddMany with the transaction refused: %v, want the hook's error", err)
	}
	hook.on.Store(false)
	s.watchOff.Store(0)
	o, err := OpenScalable(ctx, other, "refused")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.AddMany(ctx, items("b", 0, 200)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMany(ctx, items("c", 0, 200)); err != nil {
		t.Fatal(err)
	}
	if s.watchOff.Load() != 0 {
		t.Fatal("the watched write after a refused transaction aborted: its WATCH was left on the pooled connection")
	}
}
