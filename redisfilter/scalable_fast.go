package redisfilter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// Gated writes: how AddMany adds a large batch to a scalable filter
// that other clients are writing too (scalable_watch.go has the way it
// takes when none is), and the gate both ways share.
//
// The add script (scalable_script.go) does all an add needs in one
// atomic step, but each redis.call from Lua costs Redis more than a whole
// pipelined command: the script's GETBITs and the BITFIELD of k
// "SET u1" operations it builds per item cost Redis about 7 µs per item,
// against about 2.5 µs for the same BITFIELD sent by the client
// (docs/BENCHMARKS.md, issue 15). So a batch of at least gatedMinItems
// items can go as one transaction (MULTI … EXEC: atomic, nothing else
// runs between its commands) of
//
//  1. the gate, a small script: if the client's view of the filter is
//     current and the last sub-filter's count plus the batch is at most
//     its capacity, it reserves that room (counts every item of the batch
//     as new) and records the reservation, with a lease, in a sorted set
//     (pendingKey); otherwise it moves the last sub-filter aside (RENAME,
//     O(1)) and puts a set in its place;
//  2. BITFIELD commands of "SET u1 <offset> 1" for every bit of every
//     item, on the last sub-filter: their replies, the old bits, say
//     which items were new (an item is new if one of its bits was 0).
//     Behind a refusing gate they meet the set and fail (WRONGTYPE),
//     writing nothing;
//  3. the ungate script, which puts back what a refusing gate moved.
//
// Then the client releases the reservation: a ZREM when every item was
// new, else a script that also takes the items that were not new back
// from the counts (if the filter is still the one it reserved in). So:
//
//   - a write reaches only the last sub-filter of the filter the client
//     knows, within its capacity: a stale view (the filter grew, or was
//     deleted or made again) or a batch that does not fit is refused, and
//     AddMany re-reads the metadata or lets the script add the batch (and
//     grow the filter);
//   - the counts are RedisBloom's once the reservations are released, and
//     never below them meanwhile, so no sub-filter takes more items than
//     its capacity; where the script would grow a filter (or find a
//     non-scaling one full) on a count that pending reservations may yet
//     lower, it waits for them (busy) instead, so growth happens where it
//     would without gated writes;
//   - a reservation whose holder died (or whose release failed) is dropped
//     by the script once its lease has run out, and its items stay
//     counted as new: the count may then stay up to one batch high, never
//     low; a holder that outlives its lease releases nothing.
//
// Items already in an older sub-filter must not go into the last one:
// AddMany first reads them in the older sub-filters, as ExistsMany does
// (those never change once a newer one exists), and sends only the
// others. Servers that run the script alone (older versions) stay
// correct beside gated writes: they see counts that are never too low.

// gatedMinItems is the smallest batch AddMany sends through the gate: a
// gated write costs Redis two small scripts and a release beside its
// BITFIELD, more than the add script for a few items.
const gatedMinItems = 8

// leaseMillis is how long a reservation holds before the script may
// drop it: far longer than a transaction and its release take.
const leaseMillis = 5000

// gateLua: see above.
//
//	KEYS  metadata, last sub-filter, hold, reservations
//	ARGV  id, view (sub-filters), the last one's count field, items,
//	      its capacity, reservation id ("": the items are known new, no
//	      reservation), lease ms, the writes token the client's copy of
//	      the bits is as of ("": any), a new token
//
// Reply {code, the last sub-filter's count}: code 0 reserved (the count
// includes the batch, and the new token replaces the filter's), 1 stale
// view, 2 no room, 3 no filter, 5 written since the client's token; or
// the error of reading the metadata (WRONGTYPE). Whatever refuses first
// puts the set in place: an error raised in this script would let the
// BITFIELD through.
const gateLua = `
local st = redis.pcall('HMGET', KEYS[1], 'id', 'filters', ARGV[3], 'writes')
local code, fill = 0, 0
if st.err or not st[1] then
  code = 3
elseif st[1] ~= ARGV[1] or st[2] ~= ARGV[2] then
  code = 1
elseif ARGV[8] ~= '' and st[4] ~= ARGV[8] then
  code = 5
else
  fill = tonumber(st[3])
  if not fill then
    fill, code = 0, 1
  elseif fill + tonumber(ARGV[4]) > tonumber(ARGV[5]) then
    code = 2
  end
end
if code == 0 then
  redis.call('HINCRBY', KEYS[1], ARGV[3], ARGV[4])
  redis.call('HINCRBY', KEYS[1], 'items', ARGV[4])
  if st[4] then redis.call('HSET', KEYS[1], 'writes', ARGV[9]) end
  if ARGV[6] ~= '' then
    local t = redis.call('TIME')
    redis.call('ZADD', KEYS[4], t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[7]), ARGV[6])
    redis.call('PEXPIRE', KEYS[4], 2 * tonumber(ARGV[7]))
  end
  return {0, fill + tonumber(ARGV[4])}
end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('RENAME', KEYS[2], KEYS[3]) end
redis.call('SADD', KEYS[2], 'gate')
if st.err then return st end
return {code, fill}
`

// ungateLua undoes a refusing gate (KEYS: last sub-filter, hold): it
// drops the set and moves the sub-filter back, with its time to live.
const ungateLua = `
if redis.call('TYPE', KEYS[1]).ok == 'set' then
  redis.call('DEL', KEYS[1])
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('RENAME', KEYS[2], KEYS[1]) end
end
return 0
`

// releaseLua releases a reservation (KEYS: metadata, reservations; ARGV:
// reservation id, filter id, the count field, items that were not new)
// and takes those items back from the counts, unless the lease ran out
// (the reservation is gone: its items stay counted) or the filter is
// not the one reserved in. Reply 1 taken back, 0 not.
const releaseLua = `
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return 0 end
local id = redis.pcall('HGET', KEYS[1], 'id')
if id ~= ARGV[2] then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[3], -tonumber(ARGV[4]))
redis.call('HINCRBY', KEYS[1], 'items', -tonumber(ARGV[4]))
return 1
`

var releaseScript = redis.NewScript(releaseLua)

// reservationIDs makes reservation ids unique across processes: a random
// prefix per process and a counter.
var (
	reservationPrefix = func() string {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
		return hex.EncodeToString(b[:]) + ":"
	}()
	reservationCount atomic.Uint64
)

func reservationID() string {
	return reservationPrefix + strconv.FormatUint(reservationCount.Add(1), 36)
}

// writeToken is a new "writes" token (scalable_meta.go), unique across
// processes as reservation ids are.
func writeToken() string { return reservationID() }

// gatedItems is the most items of one gated write on m: scriptOps bit
// operations in the last sub-filter.
func gatedItems(m *scalableMeta) int {
	return max(1, scriptOps/int(m.subs[len(m.subs)-1].K))
}

// addFast sends the next chunk of hashes after the len(out) answered:
// as a mirrored write (scalable_mirror.go) of up to mirrorItems when s
// holds or may load a copy; else, or when that goes back to Redis's
// bits (codeConflict), as a watched write (when watchable) or a gated
// one (when that was aborted) of up to gatedItems, if it has at least
// gatedMinItems. Each needs the last sub-filter to seem to have room for
// the chunk (the gate decides). It appends the answers to out and
// returns codeDone, or why the chunk went unanswered: a refusal of the
// gate, or codeNeedsSub when it was not sent.
//
// A mirrored write takes a lane's whole batch (batchItems in the server)
// in one merge, so that two batches in flight never interleave their
// chunks: each command's answers are those of one serial order.
func (s *Scalable) addFast(ctx context.Context, m *scalableMeta, hashes []bloom.Hash, out []bool) ([]bool, int64, error) {
	rest := hashes[len(out):]
	room := m.subs[len(m.subs)-1].N - min(m.lastFill.Load(), m.subs[len(m.subs)-1].N)
	if s.mirrors != nil && m.tracked {
		n := min(len(rest), mirrorItems)
		if (n >= gatedMinItems || s.mirrorView(m)) && uint64(n) <= room {
			out = slices.Grow(out, n)
			code, err := s.addMirrored(ctx, m, rest[:n], out[len(out):len(out)+n])
			if err != nil || code != codeConflict {
				if err == nil && code == codeDone {
					out = out[:len(out)+n]
				}
				return out, code, err
			}
		}
	}
	n := min(len(rest), gatedItems(m))
	if n < gatedMinItems || uint64(n) > room {
		return out, codeNeedsSub, nil
	}
	out = slices.Grow(out, n)
	ans := out[len(out) : len(out)+n]
	code := int64(codeConflict)
	var err error
	if s.watchable(m) {
		code, err = s.addWatched(ctx, m, rest[:n], ans)
	}
	if err == nil && code == codeConflict {
		code, err = s.addGated(ctx, m, rest[:n], ans)
	}
	if err == nil && code == codeDone {
		out = out[:len(out)+n]
	}
	return out, code, err
}

// addGated adds hashes to m's filter with one gated write, answering in
// out (len(hashes)) whether each was new. It returns codeDone, or why
// the gate refused: codeStale, codeNeedsSub (the last sub-filter has no
// room for them all) or codeNotFound.
func (s *Scalable) addGated(ctx context.Context, m *scalableMeta, hashes []bloom.Hash, out []bool) (int64, error) {
	clear(out)
	last := len(m.subs) - 1
	todo, err := s.notInOlder(ctx, m, hashes)
	if err != nil || todo == nil {
		return codeStale, err
	}
	if len(todo) == 0 {
		return codeDone, nil
	}
	sz := m.subs[last]
	k := int(sz.K)
	sets := bitSets(ctx, m.subKey(last), sz, hashes, todo)
	field := "items." + strconv.Itoa(last)
	rid := reservationID()
	var gate *redis.Cmd
	_, _ = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		gate = p.Eval(ctx, gateLua, []string{s.name, m.subKey(last), m.holdKey(), m.pendingKey()},
			m.id, strconv.Itoa(len(m.subs)), field, len(todo), sz.N, rid, leaseMillis, "", writeToken())
		for _, b := range sets {
			_ = p.Process(ctx, b.cmd)
		}
		p.Eval(ctx, ungateLua, []string{m.subKey(last), m.holdKey()})
		return nil
	})
	g, gerr := gate.Int64Slice()
	switch {
	case gerr != nil:
		return 0, s.scriptErr(gerr)
	case len(g) != 2 || g[1] < 0:
		return 0, fmt.Errorf("gate reply %v", g)
	case g[0] != codeDone:
		m.lastFill.Store(uint64(g[1]))
		return g[0], nil
	}
	var fresh int
	var failed error
	for _, b := range sets {
		bits, err := b.cmd.Result()
		if err == nil && len(bits) != len(b.items)*k {
			err = fmt.Errorf("reply of %d bits for %d items", len(bits), len(b.items))
		}
		if err != nil { // nothing written: its items go back
			failed = err
			continue
		}
		for j, it := range b.items {
			if anyZero(bits[j*k : (j+1)*k]) {
				out[it] = true
				fresh++
			}
		}
	}
	s.release(ctx, m, rid, field, len(todo)-fresh)
	m.lastFill.Store(uint64(g[1]) - uint64(len(todo)-fresh))
	if failed != nil {
		return 0, failed
	}
	return codeDone, nil
}

// notInOlder returns the indices of the hashes in none of m's sub-filters
// before the last: all of them for a single sub-filter, else after one
// pipelined read; nil (and no error) if m is not current.
func (s *Scalable) notInOlder(ctx context.Context, m *scalableMeta, hashes []bloom.Hash) ([]int, error) {
	todo := make([]int, 0, len(hashes))
	found := make([]bool, len(hashes))
	if older := len(m.subs) - 1; older > 0 {
		r := getReader()
		defer putReader(r)
		current, err := s.probeAll(ctx, m, older, r, hashes, found)
		if err != nil || !current {
			return nil, err
		}
	}
	for i, f := range found {
		if !f {
			todo = append(todo, i)
		}
	}
	return todo, nil
}

// A bitSet is one BITFIELD command setting the bits of some items.
type bitSet struct {
	cmd   *redis.IntSliceCmd
	items []int // indices of the hashes it sets, in order
}

// bitSets returns the BITFIELD commands that set the bits of
// hashes[todo[…]] in sub-filter key of sizing sz: MaxOpsPerCommand
// operations each, an item's k never split. The offsets live in one
// slice the arguments point into (no boxing per offset).
func bitSets(ctx context.Context, key string, sz bloom.Sizing, hashes []bloom.Hash, todo []int) []bitSet {
	k := int(sz.K)
	per := max(1, MaxOpsPerCommand/k)
	offs := make([]uint64, 0, len(todo)*k) // never grows: args point into it
	var sets []bitSet
	var name, op any = "BITFIELD", "SET" // boxed once
	for from := 0; from < len(todo); from += per {
		items := todo[from:min(from+per, len(todo))]
		args := make([]any, 0, 2+4*k*len(items))
		args = append(args, name, key)
		for _, it := range items {
			mine := sz.Offsets(hashes[it], offs[len(offs):len(offs):len(offs)+k])
			offs = offs[:len(offs)+k]
			for j := range mine {
				args = append(args, op, "u1", &mine[j], "1")
			}
		}
		sets = append(sets, bitSet{cmd: redis.NewIntSliceCmd(ctx, args...), items: items})
	}
	return sets
}

// waitBusy sleeps after the add script found reservations pending where
// it would grow the filter, and returns the time waited so far: each
// wait twice the last, from 100 µs to 10 ms, up to twice a lease in all
// (by then the script has dropped every reservation of that moment).
func waitBusy(ctx context.Context, waited time.Duration) (time.Duration, error) {
	if waited >= 2*leaseMillis*time.Millisecond {
		return waited, fmt.Errorf("reservations still pending after %v", waited)
	}
	d := min(max(100*time.Microsecond, waited), 10*time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return waited, ctx.Err()
	case <-t.C:
		return waited + d, nil
	}
}

// release releases reservation rid, taking back present items from the
// count field. Its failure is left to the lease: the items stay counted.
func (s *Scalable) release(ctx context.Context, m *scalableMeta, rid, field string, present int) {
	if present == 0 {
		s.client.ZRem(ctx, m.pendingKey(), rid)
		return
	}
	releaseScript.Run(ctx, s.client, []string{s.name, m.pendingKey()}, rid, m.id, field, present)
}
