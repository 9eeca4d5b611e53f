package guard

import (
	"context"
	"sync"
)

// flight runs one load per ID for all the callers that want it at the
// same time (singleflight). The load runs in a goroutine of its own, so
// every caller, the first included, stops waiting when its own context
// ends while the load goes on for the others.
type flight[V any] struct {
	mu    sync.Mutex
	calls map[string]*call[V]
}

type call[V any] struct {
	done   chan struct{}
	v      V
	err    error
	joined int // callers that joined, under flight.mu (for tests)
}

// do returns the result of fn for id, running fn unless a call for id is
// under way, and reports whether this caller joined one.
func (f *flight[V]) do(ctx context.Context, id string, fn func() (V, error)) (v V, joined bool, err error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = make(map[string]*call[V])
	}
	c, joined := f.calls[id]
	if joined {
		c.joined++
	} else {
		c = &call[V]{done: make(chan struct{})}
		f.calls[id] = c
		go func() {
			c.v, c.err = fn()
			f.mu.Lock()
			delete(f.calls, id)
			f.mu.Unlock()
			close(c.done)
		}()
	}
	f.mu.Unlock()
	select {
	case <-c.done:
		return c.v, joined, c.err
	case <-ctx.Done():
		var zero V
		return zero, joined, context.Cause(ctx)
	}
}

// waiting is the number of callers that joined the call for id under
// way, or -1 if there is none.
func (f *flight[V]) waiting(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.calls[id]; c != nil {
		return c.joined
	}
	return -1
}
