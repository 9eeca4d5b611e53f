package redisfilter

import (
	"context"
	"fmt"
	"strconv"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// The writes of a scalable filter are Lua scripts, run by SHA (EVALSHA)
// and sent again with EVAL when the server answers NOSCRIPT (after SCRIPT
// FLUSH, a restart or a failover): go-redis's Script.Run. Every key a
// script touches is in KEYS, all in one slot. The scripts check that the
// caller's view of the filter (its id and number of sub-filters) is the
// stored one, and answer "stale" otherwise: the caller re-reads the
// metadata and calls again.

// addLua adds items in order, each as in bloom.Scalable.Add: if the item
// is in no sub-filter (newest first), it goes into the last one, counted;
// before that, a last one holding its capacity is followed by a new one.
// The last one's count may include reservations of gated writes in
// flight (scalable_fast.go), which count their items before they know
// which are new: it is then at least the true count, and where it reaches
// the capacity while a reservation is pending (after dropping those past
// their lease), the script stops, busy, rather than grow or report the
// filter full on a count that may yet go down.
//
//	KEYS  metadata, reservations, sub-filters 0 … view-1 [, the next sub-filter]
//	ARGV  id, view, spec of the next sub-filter ("" if none), items,
//	      k per sub-filter, capacity per sub-filter,
//	      then per item, per sub-filter, its k bit offsets,
//	      and last a new writes token, which replaces the filter's if
//	      the call sets a bit and the filter has one
//
// Reply: {code, items done, sub-filters now, one 1 (new) or 0 per item
// done}; code 0 all done, 1 stale view, 2 stopped at the next item: it
// needs a sub-filter beyond KEYS, 3 no filter, 4 stopped at the next item:
// busy.
const addLua = `
local meta = KEYS[1]
local st = redis.call('HMGET', meta, 'id', 'filters', 'writes')
if not st[1] then return {3, 0, 0} end
local nf = tonumber(st[2])
if st[1] ~= ARGV[1] or nf ~= tonumber(ARGV[2]) then return {1, 0, nf} end
local nsubs = #KEYS - 2
local nitems = tonumber(ARGV[4])
local ks, caps, starts, per = {}, {}, {}, 0
for i = 1, nsubs do
  ks[i] = tonumber(ARGV[4 + i])
  caps[i] = tonumber(ARGV[4 + nsubs + i])
  starts[i] = per
  per = per + ks[i]
end
local first = 5 + 2 * nsubs
local last = nf
local fill = tonumber(redis.call('HGET', meta, 'items.' .. (last - 1)))
local added = 0
local out = {0, 0, nf}

local wrote = false
local function flush()
  if added > 0 then
    redis.call('HINCRBY', meta, 'items.' .. (last - 1), added)
    redis.call('HINCRBY', meta, 'items', added)
    added = 0
  end
  if wrote and st[3] then
    redis.call('HSET', meta, 'writes', ARGV[#ARGV])
    wrote = false
  end
end

local function busy()
  local t = redis.call('TIME')
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', t[1] * 1000 + math.floor(t[2] / 1000))
  return redis.call('ZCARD', KEYS[2]) > 0
end

local function has(i, o)
  local key = KEYS[i + 2]
  for b = o, o + ks[i] - 1 do
    if redis.call('GETBIT', key, ARGV[b]) == 0 then return false end
  end
  return true
end

for j = 1, nitems do
  local o = first + (j - 1) * per
  local present = false
  for i = last, 1, -1 do
    if has(i, o + starts[i]) then
      present = true
      break
    end
  end
  if present then
    out[#out + 1] = 0
  else
    local grew = false
    if fill >= caps[last] then
      flush()
      if busy() then
        out[1], out[2], out[3] = 4, j - 1, last
        return out
      end
      if last == nsubs then
        out[1], out[2], out[3] = 2, j - 1, last
        return out
      end
      last = last + 1
      fill = 0
      redis.call('UNLINK', KEYS[last + 2])
      redis.call('HSET', meta, 'filters', last, 'sub.' .. (last - 1), ARGV[3], 'items.' .. (last - 1), 0)
      grew = true
    end
    local set = {'BITFIELD', KEYS[last + 2]}
    local b0 = o + starts[last]
    for b = b0, b0 + ks[last] - 1 do
      set[#set + 1] = 'SET'
      set[#set + 1] = 'u1'
      set[#set + 1] = ARGV[b]
      set[#set + 1] = 1
    end
    redis.call(unpack(set))
    wrote = true
    if grew then
      local ttl = redis.call('PTTL', meta)
      if ttl > 0 then redis.call('PEXPIRE', KEYS[last + 2], ttl) end
    end
    fill = fill + 1
    added = added + 1
    out[#out + 1] = 1
  end
end
flush()
out[2], out[3] = nitems, last
return out
`

// createLua writes the metadata hash (ARGV: field, value, …) unless the
// name exists, and makes sub-filter 0 an empty string, so that Expire
// reaches it before the first Add. Reply 1 made, 0 the name exists.
const createLua = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
redis.call('SET', KEYS[2], '')
return 1
`

// keysLua applies ARGV[3] ("delete", "persist" or "pexpire" with
// milliseconds ARGV[4]) to every key of the filter (KEYS: metadata and
// all sub-filters) if the caller's view (id ARGV[1], sub-filters ARGV[2])
// is current. Reply 0 done, 1 stale view, 3 no filter.
const keysLua = `
local st = redis.call('HMGET', KEYS[1], 'id', 'filters')
if not st[1] then return 3 end
if st[1] ~= ARGV[1] or st[2] ~= ARGV[2] then return 1 end
if ARGV[3] == 'delete' then
  redis.call('UNLINK', unpack(KEYS))
  return 0
end
for i = 1, #KEYS do
  if ARGV[3] == 'persist' then
    redis.call('PERSIST', KEYS[i])
  else
    redis.call('PEXPIRE', KEYS[i], ARGV[4])
  end
end
return 0
`

var (
	addScript    = redis.NewScript(addLua)
	createScript = redis.NewScript(createLua)
	keysScript   = redis.NewScript(keysLua)
)

// Script reply codes.
const (
	codeDone     = 0
	codeStale    = 1
	codeNeedsSub = 2
	codeNotFound = 3
	codeBusy     = 4
	codeWritten  = 5 // the gate: written since the client's token (scalable_mirror.go)
)

// scriptOps bounds the bit offsets in one add script call, so that Redis
// is never busy with one call for more than a few milliseconds.
const scriptOps = 8192

// addReply is the add script's answer for a chunk of items.
type addReply struct {
	code    int64
	filters int    // sub-filters after the call
	isNew   []bool // one per item done, in order
}

// addChunk runs the add script over hashes, as many as fit one call,
// with m as the caller's view and next, if not nil, the sub-filter a
// growth may open. It returns the reply and how many hashes it sent.
func (s *Scalable) addChunk(ctx context.Context, m *scalableMeta, next *bloom.Sizing, hashes []bloom.Hash) (addReply, int, error) {
	subs := m.subs
	keys := append([]string{s.name, m.pendingKey()}, m.subKeys()...)
	spec := ""
	if next != nil {
		subs = append(subs[:len(subs):len(subs)], *next)
		keys = append(keys, m.subKey(len(m.subs)))
		spec = subSpec(*next)
	}
	per := 0
	for _, sz := range subs {
		per += int(sz.K)
	}
	n := min(len(hashes), max(1, scriptOps/per))
	args := make([]any, 0, 5+2*len(subs)+n*per)
	args = append(args, m.id, strconv.Itoa(len(m.subs)), spec, strconv.Itoa(n))
	for _, sz := range subs {
		args = append(args, strconv.FormatUint(uint64(sz.K), 10))
	}
	for _, sz := range subs {
		args = append(args, strconv.FormatUint(sz.N, 10))
	}
	offs := make([]uint64, 0, bloom.MaxK)
	for _, h := range hashes[:n] {
		for _, sz := range subs {
			for _, o := range sz.Offsets(h, offs[:0]) {
				args = append(args, o)
			}
		}
	}
	args = append(args, writeToken())
	vals, err := addScript.Run(ctx, s.client, keys, args...).Int64Slice()
	if err != nil {
		return addReply{}, n, s.scriptErr(err)
	}
	if len(vals) < 3 || vals[1] < 0 || int(vals[1]) > n || len(vals) != 3+int(vals[1]) {
		return addReply{}, n, fmt.Errorf("script reply of %d values for %d items", len(vals), n)
	}
	r := addReply{code: vals[0], filters: int(vals[2]), isNew: make([]bool, vals[1])}
	for i, v := range vals[3:] {
		r.isNew[i] = v == 1
	}
	return r, n, nil
}

// runKeys runs the keys script with op ("delete", "persist", "pexpire")
// over the filter's keys, re-reading the metadata while the view is stale.
func (s *Scalable) runKeys(ctx context.Context, verb, op string, ms int64) error {
	m := s.view()
	for range maxStale {
		args := []any{m.id, strconv.Itoa(len(m.subs)), op, strconv.FormatInt(ms, 10)}
		code, err := keysScript.Run(ctx, s.client, m.keys(s.name, len(m.subs)), args...).Int64()
		if err != nil {
			return fmt.Errorf("redisfilter: %s %q: %w", verb, s.name, s.scriptErr(err))
		}
		switch code {
		case codeDone:
			return nil
		case codeNotFound:
			return fmt.Errorf("redisfilter: %s %q: %w", verb, s.name, ErrNotFound)
		}
		if m, err = s.refresh(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("redisfilter: %s %q: the metadata changed %d times", verb, s.name, maxStale)
}

// scriptErr names a script error that means the name holds another type.
func (s *Scalable) scriptErr(err error) error {
	if isWrongType(err) {
		return fmt.Errorf("%w: %q is not a scalable filter: %w", ErrMetadata, s.name, err)
	}
	return err
}
