package server

import "unsafe"

// The keyspace's side of a snapshot's cut (snapshot.go): copying each
// shard's slot array under lockAll, with its arrays made beforehand, and
// keeping positions still until the snapshot is written.

// cutSlack is the room prepareCut leaves in a shard's arrays for the
// keys added before the locks are taken: a shard that outgrows it is
// allocated for under the locks.
const cutSlack = slotChunk

// prepareCut makes c's arrays for the shards as they are now, with room
// to grow, and touches every page of the slot copies so that the copy
// under the locks does not fault them in (the states' zero pages are
// first touched after the locks, by the hook and the writer). It takes
// each shard's lock in turn, briefly.
func (ks *keyspace) prepareCut(c *snapCut) {
	for i := range ks.shards {
		s := &ks.shards[i]
		s.Lock()
		n, ttl := s.slots.len(), s.ttl
		s.Unlock()
		cs := &c.shards[i]
		cs.slots = make([]slot, n+cutSlack)
		touchPages(cs.slots)
		cs.slots = cs.slots[:0]
		cs.state = make([]cutState, n+cutSlack) // not touched under the locks
		if ttl > 0 {
			cs.expire = make([]int64, 0, n+cutSlack)
		}
	}
}

// touchPages writes a zero slot in every page of b.
func touchPages(b []slot) {
	step := max(1, 4096/int(unsafe.Sizeof(slot{})))
	for i := 0; i < len(b); i += step {
		b[i] = slot{}
	}
}

// cut copies every shard's slot array into c (and the expiries of a
// shard with expiring keys) and stops compaction until thaw; the caller
// holds every shard (lockAll).
func (ks *keyspace) cut(c *snapCut) {
	c.now = ks.now().UnixMilli()
	for i := range ks.shards {
		s := &ks.shards[i]
		cs := &c.shards[i]
		s.frozen = true
		for _, chunk := range s.slots.chunks {
			cs.slots = append(cs.slots, chunk...)
		}
		if len(cs.state) < len(cs.slots) { // the shard outgrew prepareCut's room
			cs.state = make([]cutState, len(cs.slots))
		}
		if s.ttl > 0 {
			for _, sl := range cs.slots {
				at := int64(0)
				if sl.e != nil {
					at = sl.e.expireAt
				}
				cs.expire = append(cs.expire, at)
			}
		} else {
			cs.expire = nil
		}
	}
}

// position returns the index of key's shard and its position there (-1
// when missing), hashing it once; the caller holds the shard's lock.
func (ks *keyspace) position(key string) (shard, pos int) {
	h := ks.hash(key)
	shard = int(h >> (64 - shardBits))
	s := &ks.shards[shard]
	_, pos = s.index.find(key, h, &s.slots)
	return shard, pos
}

// thaw lets the shards compact again, once a snapshot is written, and
// compacts those that deletions during it left mostly empty (a shard
// whose keys were all deleted might see no other deletion to do it).
func (ks *keyspace) thaw() {
	for i := range ks.shards {
		s := &ks.shards[i]
		s.Lock()
		s.frozen = false
		s.maybeCompact()
		s.Unlock()
	}
}
