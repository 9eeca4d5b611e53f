package guard

import (
	"context"
	"crypto/rand"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom"
)

// Memory is a Membership in this process: a bloom.Filter (NewMemory) or
// bloom.Scalable (NewMemoryScalable), or a bloom.Counting that can delete
// (NewMemoryCounting). Each generation hashes with a fresh random key
// (SipHash, bloom.WithKey), so the false positives an attacker finds
// change with every rebuild; pass bloom.WithKey to choose the key, or
// another bloom.Option (bloom.WithLayout) to the constructor.
//
// Tests read the current generation without locks. A rebuild exchanges
// it atomically; while it runs, adds go to both generations, and it waits
// for every Add whose commit began before it until that commit returns
// (and for the CommitWindow after an Add without commit) before it reads
// the source, so an ID is never missing from the new generation (nor
// from the one after: an Add during one rebuild is waited for by the
// next).
type Memory struct {
	newSet func(Plan) (memSet, error)
	cur    atomic.Pointer[memGen]

	mu       sync.RWMutex // Add holds it shared; Rebuild's announce and switch, exclusively
	next     *memGen      // the generation a rebuild fills
	pending  *sync.WaitGroup
	lastBare atomic.Int64 // monoNow() of the last Add without commit
}

// memGen is one generation of the filter.
type memGen struct {
	set    memSet
	since  int64         // monoNow() at the switch to it
	window time.Duration // its plan's CommitWindow
}

// memSet is a filter of one generation; add and test are safe for
// concurrent use (the filters are made WithConcurrent).
type memSet interface {
	add(id string) error
	test(id string) bool
}

// NewMemory returns an empty in-process membership whose generations are
// bloom.Filter, blocked by default, sized by each rebuild's plan. Adds
// beyond the plan's capacity raise the false-positive rate until the next
// rebuild (Options.Headroom leaves room).
func NewMemory(opts ...bloom.Option) *Memory {
	return newMemory(func(p Plan) (memSet, error) {
		f, err := bloom.New(p.Capacity, p.FalsePositiveRate, memOptions(opts)...)
		return filterSet{f}, err
	})
}

// NewMemoryScalable is NewMemory with bloom.Scalable generations, which
// grow instead of losing accuracy when adds exceed the plan's capacity.
func NewMemoryScalable(opts ...bloom.Option) *Memory {
	return newMemory(func(p Plan) (memSet, error) {
		s, err := bloom.NewScalable(p.Capacity, p.FalsePositiveRate, memOptions(opts)...)
		return scalableSet{s}, err
	})
}

func newMemory(newSet func(Plan) (memSet, error)) *Memory {
	m := &Memory{newSet: newSet, pending: new(sync.WaitGroup)}
	m.lastBare.Store(never)
	return m
}

// memOptions puts a random key and WithConcurrent before the caller's
// options, which may replace the key.
func memOptions(opts []bloom.Option) []bloom.Option {
	var key [16]byte
	rand.Read(key[:])
	return append([]bloom.Option{bloom.WithKey(key), bloom.WithConcurrent()}, opts...)
}

type filterSet struct{ f *bloom.Filter }

func (s filterSet) add(id string) error { s.f.AddString(id); return nil }
func (s filterSet) test(id string) bool { return s.f.TestString(id) }

type scalableSet struct{ s *bloom.Scalable }

func (s scalableSet) add(id string) error { _, err := s.s.AddString(id); return err }
func (s scalableSet) test(id string) bool { return s.s.TestString(id) }

// Test reports whether id may exist; before the first Rebuild, true.
func (m *Memory) Test(_ context.Context, id string) (bool, error) {
	g := m.cur.Load()
	return g == nil || g.set.test(id), nil
}

// Ready reports whether a Rebuild has filled the membership.
func (m *Memory) Ready(context.Context) (bool, error) { return m.cur.Load() != nil, nil }

// Add adds id to the current generation, and to the next one while a
// rebuild fills it, then runs commit.
func (m *Memory) Add(ctx context.Context, id string, commit func(context.Context) error) error {
	m.mu.RLock()
	cur, next := m.cur.Load(), m.next
	var err error
	if cur != nil {
		err = cur.set.add(id)
	}
	if next != nil && err == nil {
		err = next.set.add(id)
	}
	// Every write in flight is waited for by the next rebuild to
	// announce itself, also one that added to the next generation: that
	// rebuild may end, and another begin and read the source, before
	// the write commits.
	var wg *sync.WaitGroup
	if err == nil && commit != nil {
		wg = m.pending
		wg.Add(1)
	}
	if commit == nil {
		m.lastBare.Store(monoNow())
	}
	m.mu.RUnlock()
	if err != nil || commit == nil {
		return err
	}
	if wg != nil {
		defer wg.Done()
	}
	return commit(ctx)
}

// Rebuild fills a new generation from ids and switches to it.
func (m *Memory) Rebuild(ctx context.Context, plan Plan, ids iter.Seq2[string, error]) (err error) {
	set, err := m.newSet(plan)
	if err != nil {
		return err
	}
	gen := &memGen{set: set, window: plan.CommitWindow}
	m.mu.Lock()
	if m.next != nil {
		m.mu.Unlock()
		return ErrRebuildRunning
	}
	m.next = gen
	inflight := m.pending
	m.pending = new(sync.WaitGroup)
	lastBare := m.lastBare.Load()
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		if err == nil {
			gen.since = monoNow()
			m.cur.Store(gen)
		}
		m.next = nil
		m.mu.Unlock()
	}()
	if err := waitGroup(ctx, inflight); err != nil {
		return err
	}
	if err := sleep(ctx, time.Duration(lastBare+int64(plan.CommitWindow)-monoNow())); err != nil {
		return err
	}
	return fill(ctx, ids, set.add)
}

// fill adds every ID of ids, checking ctx every 4096.
func fill(ctx context.Context, ids iter.Seq2[string, error], add func(string) error) error {
	n := 0
	for id, err := range ids {
		if err != nil {
			return err
		}
		if err := add(id); err != nil {
			return err
		}
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	return ctx.Err()
}

// waitGroup waits for wg or ctx.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// sleep waits d (nothing if d ≤ 0) or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// MemoryCounting is a Memory of bloom.Counting generations (4-bit
// counters, 4× the memory of a Filter), which can delete: it implements
// Deleter.
type MemoryCounting struct{ *Memory }

// NewMemoryCounting returns an empty in-process membership whose
// generations are bloom.Counting filters.
func NewMemoryCounting(opts ...bloom.Option) *MemoryCounting {
	return &MemoryCounting{newMemory(func(p Plan) (memSet, error) {
		c, err := bloom.NewCounting(p.Capacity, p.FalsePositiveRate, memOptions(opts)...)
		return countingSet{c}, err
	})}
}

type countingSet struct{ c *bloom.Counting }

func (s countingSet) add(id string) error { s.c.AddString(id); return nil }
func (s countingSet) test(id string) bool { return s.c.TestString(id) }

// Remove deletes id from the current generation, unless that generation
// was switched to less than its CommitWindow ago (then id's deletion may
// have committed before the rebuild read the source, so the generation
// may not hold id): it reports whether it deleted.
func (m *MemoryCounting) Remove(_ context.Context, id string) (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.cur.Load()
	if g == nil || monoNow()-g.since < int64(g.window) {
		return false, nil
	}
	return g.set.(countingSet).c.RemoveString(id), nil
}
