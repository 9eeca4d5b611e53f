package server

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom"
)

// keyShards is the number of independently locked parts of the keyspace;
// a key's shard is the top shardBits bits of its hash.
const (
	keyShards = 64
	shardBits = 6
)

// entry is one key's value: a filter and its expiry (0: none; else Unix
// ms). Its address identifies the value for life, across RENAME (the
// snapshot's copy-on-write hook relies on it).
type entry struct {
	filter   *bloom.Scalable
	expireAt int64
}

// slot is one position of a shard's slot array: a key and its entry, or
// free (e nil).
type slot struct {
	key string
	e   *entry
}

// keyspace holds the filters. Each key lives in one shard, chosen by a
// hash of its name; a command locks the shards of its keys (in index
// order when there are several), so commands on keys of different shards
// run in parallel, and the effects on one key (and their order in the
// log) are serialised.
//
// In a shard, keys live in a slot array at positions that stay the same
// for as long as the key exists (freed positions are reused), found
// through an open-addressing index; SCAN's cursor is a shard and a
// position (keyspace_scan.go). When deletions leave a shard's array
// mostly empty it is compacted, which renumbers its positions and bumps
// the shard's epoch, so that scans in progress restart the shard.
//
// Memory per key, beyond the filter: the slot (24 bytes; the array's
// spare capacity is at most one chunk a shard: keyspace_slots.go), the
// index cell (8 bytes at a load factor of 3/8 to 3/4), the entry (16
// bytes) and the key's bytes (in one object with a small filter:
// keyspace_value.go); 16 more in the expiry heap for a key with an
// expiry.
//
// Expiry: a key whose time has come is deleted when it is next looked up
// (get) or by sweep (keyspace_expiry.go), and expiring is told under the
// key's lock, so that the memory backend journals the deletion in order
// with the key's other changes.
type keyspace struct {
	seed   maphash.Seed
	shards [keyShards]shard
	now    func() time.Time

	// dropped, when set, is called (under the shard's lock, or by
	// release after detach) for every entry that leaves the keyspace:
	// deleted, replaced, expired or flushed. The memory
	// backend keeps its byte count with it.
	dropped func(e *entry)
	// modifying, when set, is called (under the shard's lock) before a
	// filter is changed in place; a snapshot in progress keeps a copy of
	// the filter as it was.
	modifying func(key string, e *entry)
	// expiring, when set, is called under the shard's lock for every key
	// the keyspace deletes by itself because its time has come.
	expiring func(key string)

	expired   atomic.Int64 // keys deleted because they expired
	expires   atomic.Int64 // keys with an expiry, counting expired ones not yet deleted
	sweepFrom atomic.Int32 // the shard the next sweep starts at
}

// shard is one independently locked part of the keyspace.
type shard struct {
	sync.Mutex
	slots  slotArray
	free   []uint32   // free positions of slots, reused before the array grows
	index  index      // key → position
	live   int        // occupied slots
	epoch  uint32     // bumped when positions change (compact)
	expiry expiryHeap // positions of keys with an expiry, soonest first (stale items are skipped)
	ttl    int        // occupied slots whose entry has an expiry
	frozen bool       // a snapshot's cut holds the positions: no compaction (keyspace_cut.go)
}

// newKeyspace makes an empty keyspace whose clock is now: time.Now to
// serve, stoppedClock to load (startClock ends the loading).
func newKeyspace(now func() time.Time) *keyspace {
	return &keyspace{seed: maphash.MakeSeed(), now: now}
}

// stoppedClock is the clock of a keyspace being loaded: it stands at
// 1970, so nothing expires while the past is replayed (the log holds the
// deletions of the keys that expired, in their place).
func stoppedClock() time.Time { return time.UnixMilli(0) }

// startClock sets the clock of a keyspace that has been loaded, once,
// before it is shared with any other goroutine.
func (ks *keyspace) startClock(now func() time.Time) { ks.now = now }

func (ks *keyspace) hash(key string) uint64 { return maphash.String(ks.seed, key) }

func (ks *keyspace) shardOf(key string) int { return int(ks.hash(key) >> (64 - shardBits)) }

// locate returns key's shard, its index cell and position (-1, -1 when
// missing). The caller holds the shard's lock.
func (ks *keyspace) locate(key string) (s *shard, cell, pos int) {
	h := ks.hash(key)
	s = &ks.shards[h>>(64-shardBits)]
	cell, pos = s.index.find(key, h, &s.slots)
	return s, cell, pos
}

// lock locks the shards holding keys and returns the unlock function.
// lockKey locks key's shard and returns it, for the caller to unlock: a
// single key's lock without lock's closure (an allocation per command).
func (ks *keyspace) lockKey(key string) *shard {
	s := &ks.shards[ks.shardOf(key)]
	s.Lock()
	return s
}

func (ks *keyspace) lock(keys ...string) func() {
	if len(keys) == 1 {
		s := &ks.shards[ks.shardOf(keys[0])]
		s.Lock()
		return s.Unlock
	}
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

// find returns key's shard, index cell and position (-1, -1 when it is
// missing), deleting the key first if it has expired. The caller holds
// key's shard lock.
func (ks *keyspace) find(key string) (s *shard, cell, pos int) {
	s, cell, pos = ks.locate(key)
	if pos >= 0 {
		if e := s.slots.at(pos).e; e.expireAt != 0 && e.expireAt <= ks.now().UnixMilli() {
			ks.expire(s, cell, pos)
			s.maybeCompact()
			return s, -1, -1
		}
	}
	return s, cell, pos
}

// get returns key's entry, or nil if it is missing or expired (an expired
// key is deleted). The caller holds key's shard lock.
func (ks *keyspace) get(key string) *entry {
	s, _, pos := ks.find(key)
	if pos < 0 {
		return nil
	}
	return s.slots.at(pos).e
}

// peek returns key's entry, expired or not, without deleting anything.
// The caller holds key's shard lock.
func (ks *keyspace) peek(key string) *entry {
	s, _, pos := ks.locate(key)
	if pos < 0 {
		return nil
	}
	return s.slots.at(pos).e
}

// set stores e under key, replacing what was there (the caller holds
// key's shard lock).
func (ks *keyspace) set(key string, e *entry) {
	h := ks.hash(key)
	s := &ks.shards[h>>(64-shardBits)]
	_, pos := s.index.find(key, h, &s.slots)
	if pos >= 0 {
		old := s.slots.at(pos).e
		if old == e {
			return
		}
		ks.forget(s, old)
		ks.drop(old)
		s.slots.at(pos).e = e
		ks.track(s, e, pos)
		return
	}
	ks.insert(key, e)
}

// insert stores e under key, which is missing: the caller holds key's
// shard lock, under which it found it so (get or find).
func (ks *keyspace) insert(key string, e *entry) {
	h := ks.hash(key)
	s := &ks.shards[h>>(64-shardBits)]
	pos := s.add(key, e)
	s.index.insert(h, pos)
	ks.track(s, e, pos)
}

// track counts e, just stored at pos, and schedules its expiry.
func (ks *keyspace) track(s *shard, e *entry, pos int) {
	if e.expireAt != 0 {
		s.ttl++
		ks.expires.Add(1)
		s.expiry.push(expiryItem{at: e.expireAt, pos: uint32(pos)})
		s.expiry.trim(s)
	}
}

// forget uncounts e, leaving (or moving within) s.
func (ks *keyspace) forget(s *shard, e *entry) {
	if e.expireAt != 0 {
		s.ttl--
		ks.expires.Add(-1)
	}
}

// setExpire changes the expiry of key's entry e to at (0: none). The
// caller holds key's shard lock.
func (ks *keyspace) setExpire(key string, e *entry, at int64) {
	s, _, pos := ks.locate(key)
	if pos < 0 || s.slots.at(pos).e != e || e.expireAt == at {
		e.expireAt = at
		return
	}
	ks.forget(s, e)
	e.expireAt = at
	ks.track(s, e, pos)
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

// unlink takes the key at pos (index cell cell) out of s and returns its
// entry; the caller reports it (drop) unless it moves.
func (ks *keyspace) unlink(s *shard, cell, pos int) *entry {
	sl := s.slots.at(pos)
	e := sl.e
	ks.forget(s, e)
	s.index.remove(cell)
	*sl = slot{}
	s.free = append(s.free, uint32(pos))
	s.live--
	return e
}

// expire deletes the expired key at pos and tells expiring.
func (ks *keyspace) expire(s *shard, cell, pos int) {
	key := s.slots.at(pos).key
	ks.drop(ks.unlink(s, cell, pos))
	ks.expired.Add(1)
	if ks.expiring != nil {
		ks.expiring(key)
	}
}

// del deletes key and reports whether it existed (unexpired). The caller
// holds key's shard lock.
func (ks *keyspace) del(key string) bool {
	s, cell, pos := ks.find(key)
	if pos < 0 {
		return false
	}
	ks.drop(ks.unlink(s, cell, pos))
	s.maybeCompact()
	return true
}

// rename moves from's entry to to, replacing to's, and reports whether
// from existed (unexpired). The entry keeps its address and expiry. The
// caller holds both keys' shard locks.
func (ks *keyspace) rename(from, to string) bool {
	if _, _, pos := ks.find(from); pos < 0 {
		return false
	}
	ks.get(to) // an expired destination is deleted (and journaled) first, as Redis does
	if from == to {
		return true
	}
	s, cell, pos := ks.locate(from) // again: deleting to may have compacted the shard
	// The key leaves its position: a snapshot in progress takes its
	// filter as it was first (snapshot.go).
	ks.modify(from, s.slots.at(pos).e)
	e := ks.unlink(s, cell, pos)
	s.maybeCompact()
	ks.set(to, e)
	return true
}

// len is the number of keys, counting not yet deleted expired ones.
func (ks *keyspace) len() int {
	n := 0
	for i := range ks.shards {
		s := &ks.shards[i]
		s.Lock()
		n += s.live
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

// eachLocked calls fn for every key, expired ones included; the caller
// holds every shard (lockAll).
func (ks *keyspace) eachLocked(fn func(key string, e *entry)) {
	for i := range ks.shards {
		for _, sl := range ks.shards[i].slots.all {
			if sl.e != nil {
				fn(sl.key, sl.e)
			}
		}
	}
}

// detach empties every shard and returns what they held; the caller holds
// every shard (lockAll), and afterwards, with no lock held, passes the
// result to release. So FLUSHALL holds the locks for a moment whatever
// the number of keys.
func (ks *keyspace) detach() []slotArray {
	old := make([]slotArray, keyShards)
	for i := range ks.shards {
		s := &ks.shards[i]
		old[i] = s.slots
		ks.expires.Add(-int64(s.ttl))
		s.slots, s.free, s.index, s.expiry = slotArray{}, nil, index{}, nil
		s.live, s.ttl = 0, 0
		s.epoch++
	}
	return old
}

// release reports every entry of a detach as dropped.
func (ks *keyspace) release(old []slotArray) {
	for _, slots := range old {
		for _, sl := range slots.all {
			if sl.e != nil {
				ks.drop(sl.e)
			}
		}
	}
}
