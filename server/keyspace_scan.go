package server

// SCAN over the keyspace. A cursor is a shard and a position in its slot
// array, plus the shard's epoch when the scan got there:
//
//	bits  0–31  position
//	bits 32–37  shard
//	bits 38–63  epoch (mod 2^26)
//
// Positions are stable while a key exists, so a key present for a whole
// scan is at a position the scan passes, and is returned at least once.
// If the shard was compacted since (another epoch), the scan restarts
// the shard: it may return keys twice, never miss one. The cursor of the
// first call, 0, is shard 0 at position 0; the last call returns 0.

const (
	cursorShardShift = 32
	cursorEpochShift = 38
	cursorEpochMask  = 1<<(64-cursorEpochShift) - 1
)

// scanBatch bounds the slots visited under one hold of a shard's lock.
const scanBatch = 1024

// scan visits about count occupied slots from cursor on, and at most
// 10×count free ones (moving to the next shard counts as one), as Redis
// bounds a SCAN call's work by COUNT. It returns the keys among them that
// have not expired and pass keep (called under the shard's lock), and the
// next cursor (0 after the last shard).
func (ks *keyspace) scan(cursor uint64, count int, keep func(string) bool) (uint64, []string) {
	pos := int(uint32(cursor))
	sh := int(cursor>>cursorShardShift) % keyShards
	epoch := uint32(cursor >> cursorEpochShift)
	count = max(count, 1)
	maxFree := 10 * count
	visited, free := 0, 0
	var keys []string
	now := ks.now().UnixMilli()
	for sh < keyShards && visited < count && free < maxFree {
		s := &ks.shards[sh]
		s.Lock()
		if cur := s.epoch & cursorEpochMask; pos == 0 || epoch != cur {
			pos, epoch = 0, cur // a new shard, or compacted since: from the start
		}
		end := min(s.slots.len(), pos+scanBatch)
		expiries := s.ttl > 0 // else no entry needs reading
		for ; pos < end && visited < count && free < maxFree; pos++ {
			sl := s.slots.at(pos)
			if sl.e == nil {
				free++
				continue
			}
			visited++
			if keep(sl.key) && (!expiries || sl.e.expireAt == 0 || sl.e.expireAt > now) {
				keys = append(keys, sl.key)
			}
		}
		if pos >= s.slots.len() {
			sh, pos = sh+1, 0
			free++
		}
		s.Unlock()
	}
	if sh >= keyShards {
		return 0, keys
	}
	return uint64(pos) | uint64(sh)<<cursorShardShift | uint64(epoch)<<cursorEpochShift, keys
}
