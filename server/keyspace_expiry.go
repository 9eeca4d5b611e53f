package server

import (
	"cmp"
	"slices"
	"time"
)

// Active expiry. Each shard keeps a min-heap of (expiry, position) for
// its keys with an expiry; an item is pushed whenever a key's expiry is
// set, and never updated, so items can be stale (the key's expiry
// changed, the key left, the slot was reused): the sweep checks the slot
// and skips those, and trim drops them when they outnumber the keys with
// an expiry. So the sweep's work is the number of keys that expired, not
// the number of keys.

// expiryItem is one scheduled expiry.
type expiryItem struct {
	at  int64 // Unix ms
	pos uint32
}

type expiryHeap []expiryItem

func (h *expiryHeap) push(it expiryItem) {
	*h = append(*h, it)
	h.up(len(*h) - 1)
}

func (h *expiryHeap) pop() expiryItem {
	old := *h
	it := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
	return it
}

func (h expiryHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (h expiryHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].at < h[c].at {
			c++
		}
		if h[i].at <= h[c].at {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

func (h expiryHeap) heapify() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// current reports whether it still describes the key at its position.
func (it expiryItem) current(s *shard) bool {
	if int(it.pos) >= s.slots.len() {
		return false
	}
	e := s.slots.at(int(it.pos)).e
	return e != nil && e.expireAt == it.at
}

// trim drops stale items once they outnumber the keys with an expiry (a
// key whose expiry is refreshed on every write pushes one item each
// time). The work is paid for by the pushes since the last trim.
func (h *expiryHeap) trim(s *shard) {
	if len(*h) <= 2*s.ttl+64 {
		return
	}
	kept := slices.DeleteFunc(*h, func(it expiryItem) bool { return !it.current(s) })
	// An expiry set back to an earlier value leaves two current items.
	slices.SortFunc(kept, func(a, b expiryItem) int { return cmp.Compare(a.pos, b.pos) })
	kept = slices.Compact(kept)
	kept.heapify()
	*h = kept
}

// rebuild schedules every key of s with an expiry afresh (positions
// changed).
func (h *expiryHeap) rebuild(s *shard) {
	*h = (*h)[:0]
	for pos, sl := range s.slots.all {
		if sl.e != nil && sl.e.expireAt != 0 {
			*h = append(*h, expiryItem{at: sl.e.expireAt, pos: uint32(pos)})
		}
	}
	h.heapify()
}

// sweepBatch bounds the deletions made under one hold of a shard's lock;
// sweepBudget bounds the time of one sweep (called ten times a second:
// at most a quarter of a core, as Redis's active expiry).
const (
	sweepBatch  = 128
	sweepBudget = 25 * time.Millisecond
)

// sweep deletes expired keys, soonest first in each shard, telling
// expiring about each, and returns how many. When it runs out of budget
// the next sweep starts with the shard it stopped in.
func (ks *keyspace) sweep() int {
	start := time.Now()
	now := ks.now().UnixMilli()
	n := 0
	first := int(ks.sweepFrom.Load())
	for k := range keyShards {
		i := (first + k) % keyShards
		for more := true; more; {
			var d int
			d, more = ks.sweepShard(&ks.shards[i], now)
			n += d
			if time.Since(start) > sweepBudget {
				ks.sweepFrom.Store(int32(i))
				return n
			}
		}
	}
	return n
}

// sweepShard deletes the expired keys of s, looking at up to sweepBatch
// items of its heap, and reports whether it stopped before the end.
func (ks *keyspace) sweepShard(s *shard, now int64) (deleted int, more bool) {
	s.Lock()
	defer s.Unlock()
	defer s.maybeCompact()
	for range sweepBatch {
		if len(s.expiry) == 0 || s.expiry[0].at > now {
			return deleted, false
		}
		it := s.expiry.pop()
		if !it.current(s) {
			continue
		}
		key := s.slots.at(int(it.pos)).key
		cell, pos := s.index.find(key, ks.hash(key), &s.slots)
		ks.expire(s, cell, pos)
		deleted++
	}
	return deleted, true
}
