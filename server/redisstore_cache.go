package server

import (
	"container/list"
	"sync"

	"github.com/bloomery/bloom/redisfilter"
)

// filterCache keeps the most recently used opened filters of the Redis
// backend, up to a bound, so that a command on a known key needs no
// metadata read. An entry may be out of date (the filter grown, deleted
// or made again by another server): redisfilter's scripts and reads check
// the view they are given and re-read the metadata, or fail with
// ErrNotFound, in which case the backend drops the entry. A filter that
// leaves the cache drops its copy of the bits (redisfilter.WithMirrors),
// giving its bytes back to the budget: in a goroutine, since a mirrored
// write in flight holds the copy for a round trip.
type filterCache struct {
	mu    sync.Mutex
	max   int
	order list.List // of *cached, most recent first
	byKey map[string]*list.Element
}

type cached struct {
	key string
	f   *redisfilter.Scalable
}

func newFilterCache(max int) *filterCache {
	return &filterCache{max: max, byKey: make(map[string]*list.Element)}
}

// get returns key's filter, or nil.
func (c *filterCache) get(key string) *redisfilter.Scalable {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byKey[key]
	if e == nil {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*cached).f
}

// put makes f key's filter, evicting the least recently used beyond max.
func (c *filterCache) put(key string, f *redisfilter.Scalable) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[key]; e != nil {
		if old := e.Value.(*cached).f; old != f {
			left(old)
		}
		e.Value.(*cached).f = f
		c.order.MoveToFront(e)
		return
	}
	c.byKey[key] = c.order.PushFront(&cached{key, f})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cached).key)
		left(last.Value.(*cached).f)
	}
}

// left drops the copy of a filter that left the cache.
func left(f *redisfilter.Scalable) { go f.DropMirror() }

// drop forgets key's filter if it is still f (another goroutine may have
// put a newer one meanwhile), or whatever it is if f is nil.
func (c *filterCache) drop(key string, f *redisfilter.Scalable) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[key]; e != nil && (f == nil || e.Value.(*cached).f == f) {
		c.order.Remove(e)
		delete(c.byKey, key)
		left(e.Value.(*cached).f)
	}
}

// clear forgets every filter.
func (c *filterCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.order.Front(); e != nil; e = e.Next() {
		left(e.Value.(*cached).f)
	}
	c.order.Init()
	clear(c.byKey)
}

// len is the number of filters kept.
func (c *filterCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
