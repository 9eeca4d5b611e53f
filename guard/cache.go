package guard

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// Cache holds values loaded from the source, so that a repeated Get of an
// existing ID costs neither the filter's false positives nor a load. An
// implementation may keep values in this process (MemoryCache) or
// elsewhere (Redis, memcached); it must be safe for concurrent use. Its
// errors are counted and otherwise treated as a miss (Get, Set) or passed
// on (Delete, from Removed).
type Cache[V any] interface {
	Get(ctx context.Context, id string) (v V, ok bool, err error)
	Set(ctx context.Context, id string, v V) error
	Delete(ctx context.Context, id string) error
}

// MemoryCache is a Cache in this process: at most size entries, each
// kept at most ttl, the least recently used evicted first. It is sharded
// over 32 locks, so the bound holds per shard (size/32 rounded up each).
// It is safe for concurrent use; a Get is a map lookup and a clock read
// under one shard's lock, with no allocation.
type MemoryCache[V any] struct {
	seed   maphash.Seed
	ttl    int64 // nanoseconds
	shards [cacheShards]cacheShard[V]
}

const cacheShards = 32

type cacheShard[V any] struct {
	mu    sync.Mutex
	max   int
	hits  uint64 // Guard hits (getCounted), under mu
	items map[string]*cacheEntry[V]
	lru   cacheEntry[V] // sentinel: lru.next is the most recent
	_     [32]byte      // keep shards on separate cache lines
}

type cacheEntry[V any] struct {
	id         string
	v          V
	expires    int64 // monoNow() nanoseconds
	prev, next *cacheEntry[V]
}

// NewMemoryCache returns an empty cache of at most size entries (at least
// one per shard) that keeps each for ttl.
func NewMemoryCache[V any](size int, ttl time.Duration) *MemoryCache[V] {
	c := &MemoryCache[V]{seed: maphash.MakeSeed(), ttl: int64(ttl)}
	per := max(1, (size+cacheShards-1)/cacheShards)
	for i := range c.shards {
		s := &c.shards[i]
		s.max, s.items = per, make(map[string]*cacheEntry[V])
		s.lru.next, s.lru.prev = &s.lru, &s.lru
	}
	return c
}

var monoStart = time.Now()

// monoNow is the monotonic clock in nanoseconds since the package loaded.
func monoNow() int64 { return int64(time.Since(monoStart)) }

func (c *MemoryCache[V]) shard(id string) *cacheShard[V] {
	return &c.shards[maphash.String(c.seed, id)%cacheShards]
}

// Get returns id's value if it is cached and has not expired. It never
// fails.
func (c *MemoryCache[V]) Get(_ context.Context, id string) (V, bool, error) {
	v, ok := c.get(id)
	return v, ok, nil
}

// Set caches v for id, evicting the least recently used entry of its
// shard if the shard is full. It never fails.
func (c *MemoryCache[V]) Set(_ context.Context, id string, v V) error {
	c.set(id, v)
	return nil
}

// Delete drops id's entry, if any. It never fails.
func (c *MemoryCache[V]) Delete(_ context.Context, id string) error {
	c.del(id)
	return nil
}

// Len is the number of entries, expired ones not yet dropped included.
func (c *MemoryCache[V]) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.items)
		s.mu.Unlock()
	}
	return n
}

func (c *MemoryCache[V]) get(id string) (V, bool) { return c.lookup(id, false) }

// getCounted is get for a Guard, which counts its hits here, under the
// shard's lock it takes anyway, rather than in a counter of its own.
func (c *MemoryCache[V]) getCounted(id string) (V, bool) { return c.lookup(id, true) }

// hits is the number of getCounted calls that hit.
func (c *MemoryCache[V]) hits() uint64 {
	var n uint64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.hits
		s.mu.Unlock()
	}
	return n
}

func (c *MemoryCache[V]) lookup(id string, count bool) (V, bool) {
	s := c.shard(id)
	now := monoNow()
	s.mu.Lock()
	e := s.items[id]
	if e == nil {
		s.mu.Unlock()
		var zero V
		return zero, false
	}
	if now >= e.expires {
		s.remove(e)
		s.mu.Unlock()
		var zero V
		return zero, false
	}
	s.unlink(e)
	s.pushFront(e)
	if count {
		s.hits++
	}
	v := e.v
	s.mu.Unlock()
	return v, true
}

func (c *MemoryCache[V]) set(id string, v V) {
	s := c.shard(id)
	expires := monoNow() + c.ttl
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.items[id]; e != nil {
		e.v, e.expires = v, expires
		s.unlink(e)
		s.pushFront(e)
		return
	}
	if len(s.items) >= s.max {
		s.remove(s.lru.prev)
	}
	e := &cacheEntry[V]{id: id, v: v, expires: expires}
	s.items[id] = e
	s.pushFront(e)
}

func (c *MemoryCache[V]) del(id string) {
	s := c.shard(id)
	s.mu.Lock()
	if e := s.items[id]; e != nil {
		s.remove(e)
	}
	s.mu.Unlock()
}

func (s *cacheShard[V]) remove(e *cacheEntry[V]) {
	s.unlink(e)
	delete(s.items, e.id)
}

func (s *cacheShard[V]) unlink(e *cacheEntry[V]) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (s *cacheShard[V]) pushFront(e *cacheEntry[V]) {
	e.prev, e.next = &s.lru, s.lru.next
	s.lru.next.prev = e
	s.lru.next = e
}
