package server

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom"
)

// keyShards is the number of independently locked parts of the keyspace.
const keyShards = 64

// entry is one key: a filter and its expiry (0: none; else Unix ms).
type entry struct {
	filter   *bloom.Scalable
	expireAt int64
}

// keyspace holds the filters. Each key lives in one shard, chosen by a
// hash of its name; a command locks the shards of its keys (in index
// order when there are several), so commands on keys of different shards
// run in parallel, and the effects on one key (and their order in the
// log) are serialised.
type keyspace struct {
	seed   maphash.Seed
	shards [keyShards]struct {
		sync.Mutex
		m map[string]*entry
	}
	now func() time.Time

	// dropped, when set, is called (under the shard's lock) for every
	// entry that leaves the keyspace: deleted, replaced, expired or
	// flushed. The memory backend keeps its byte count with it.
	dropped func(e *entry)
	// modifying, when set, is called (under the shard's lock) before a
	// filter is changed in place; a snapshot in progress keeps a copy of
	// the filter as it was.
	modifying func(key string, e *entry)

	expired atomic.Int64 // keys deleted because they expired
}

func newKeyspace() *keyspace {
	ks := &keyspace{seed: maphash.MakeSeed(), now: time.Now}
	for i := range ks.shards {
		ks.shards[i].m = make(map[string]*entry)
	}
	return ks
}

func (ks *keyspace) shardOf(key string) int {
	return int(maphash.String(ks.seed, key) % keyShards)
}

// lock locks the shards holding keys and returns the unlock function.
func (ks *keyspace) lock(keys ...string) func() {
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, ks.shardOf(k))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		ks.shards[i].Lock()
	}
	return func() {
		for _, i := range idx {
			ks.shards[i].Unlock()
		}
	}
}

// get returns key's entry, or nil if it is missing or expired (an expired
// key is deleted). The caller holds key's shard lock.
func (ks *keyspace) get(key string) *entry {
	m := ks.shards[ks.shardOf(key)].m
	e := m[key]
	if e != nil && e.expireAt != 0 && e.expireAt <= ks.now().UnixMilli() {
		delete(m, key)
		ks.drop(e)
		ks.expired.Add(1)
		return nil
	}
	return e
}

// set stores e under key, replacing what was there (the caller holds
// key's shard lock).
func (ks *keyspace) set(key string, e *entry) {
	m := ks.shards[ks.shardOf(key)].m
	if old := m[key]; old != nil && old != e {
		ks.drop(old)
	}
	m[key] = e
}

// drop reports e leaving the keyspace.
func (ks *keyspace) drop(e *entry) {
	if ks.dropped != nil {
		ks.dropped(e)
	}
}

// modify is called before key's filter is changed in place.
func (ks *keyspace) modify(key string, e *entry) {
	if ks.modifying != nil {
		ks.modifying(key, e)
	}
}

// del deletes key and reports whether it existed (unexpired). The caller
// holds key's shard lock.
func (ks *keyspace) del(key string) bool {
	e := ks.get(key)
	if e == nil {
		return false
	}
	delete(ks.shards[ks.shardOf(key)].m, key)
	ks.drop(e)
	return true
}

// each calls fn for every unexpired key, shard by shard, holding one
// shard's lock at a time (fn must not lock shards), and deletes the
// expired keys it passes. Keys added or deleted meanwhile may or may not
// be seen. It returns how many expired keys it deleted.
func (ks *keyspace) each(fn func(key string, e *entry)) int {
	n := 0
	now := ks.now().UnixMilli()
	for i := range ks.shards {
		s := &ks.shards[i]
		s.Lock()
		for k, e := range s.m {
			if e.expireAt != 0 && e.expireAt <= now {
				delete(s.m, k)
				ks.drop(e)
				ks.expired.Add(1)
				n++
			} else if fn != nil {
				fn(k, e)
			}
		}
		s.Unlock()
	}
	return n
}

// scan returns the keys of shards cursor, cursor+1, … that pass keep,
// stopping after the shard in which it has count keys, and the next
// cursor (0 after the last shard). Keys present for a whole SCAN are
// returned at least once; others may or may not be.
func (ks *keyspace) scan(cursor uint64, count int, keep func(string) bool) (uint64, []string) {
	var keys []string
	now := ks.now().UnixMilli()
	for i := cursor; i < keyShards; i++ {
		s := &ks.shards[i]
		s.Lock()
		for k, e := range s.m {
			if (e.expireAt == 0 || e.expireAt > now) && keep(k) {
				keys = append(keys, k)
			}
		}
		s.Unlock()
		if len(keys) >= count && i+1 < keyShards {
			return i + 1, keys
		}
	}
	return 0, keys
}

// len is the number of keys, counting not yet collected expired ones.
func (ks *keyspace) len() int {
	n := 0
	for i := range ks.shards {
		s := &ks.shards[i]
		s.Lock()
		n += len(s.m)
		s.Unlock()
	}
	return n
}

// lockAll locks every shard (a consistent cut of the keyspace) and
// returns the unlock function.
func (ks *keyspace) lockAll() func() {
	for i := range ks.shards {
		ks.shards[i].Lock()
	}
	return func() {
		for i := range ks.shards {
			ks.shards[i].Unlock()
		}
	}
}

// flush deletes every key; the caller holds every shard (lockAll).
func (ks *keyspace) flush() {
	for i := range ks.shards {
		s := &ks.shards[i]
		for _, e := range s.m {
			ks.drop(e)
		}
		clear(s.m)
	}
}

// sweep deletes expired keys and returns how many.
func (ks *keyspace) sweep() int { return ks.each(nil) }
