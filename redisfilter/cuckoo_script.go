package redisfilter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/bloomery/bloom/cuckoo"
	"github.com/redis/go-redis/v9"
)

// The scripts of Cuckoo: cuckooLib's functions and a body each, run by
// SHA (EVALSHA) and sent again with EVAL on NOSCRIPT (go-redis's
// Script.Run). Each reads the metadata itself, so a client keeps no view
// of the filter that could go stale, and each is one atomic step.

// Script reply codes, the first element of every reply.
const (
	cuckooOK         = 0
	cuckooMissing    = 3 // no key
	cuckooExists     = 4 // create: the key exists
	cuckooWrongKind  = 5 // the key holds something else
	cuckooMaxFilters = 6 // insert refused: too many sub-filters
	cuckooBadChunk   = 7 // a chunk that does not fit
	cuckooUnchanged  = 8 // expiry: the condition refused
)

// createBody makes the filter (ARGV: metadata field, value, …) unless the
// key exists (code 4 for a cuckoo filter, else 5), its pieces
// zero-filled.
const createBody = `
local old, code = open()
if old then return {4} end
if code ~= 3 then return {5} end
redis.call('HSET', KEYS[1], unpack(ARGV))
local f = open()
extend(f, 0)
return {0}
`

// insertBody inserts items (ARGV[4], packed hashes) in order, each
// stored only if absent when ARGV[1] is "nx", growing up to ARGV[2]
// bytes; it refuses the whole call when the filter has ARGV[3] ≠ 0
// sub-filters or more, and makes a missing filter from ARGV[5…]
// (metadata fields as for createBody) if there are any. Reply: code,
// then per item 1 stored, 0 present (nx), -1 no space, -2 growth failed.
const insertBody = `
local f, code = open()
if not f then
  if code ~= 3 or #ARGV < 5 then return {code} end
  redis.call('HSET', KEYS[1], unpack(ARGV, 5))
  f = open()
  extend(f, 0)
end
if ARGV[3] ~= '0' and f.nf >= tonumber(ARGV[3]) then return {6} end
local nx, maxbytes, s = ARGV[1] == 'nx', tonumber(ARGV[2]), ARGV[4]
local out = {0}
for i = 1, #s / 8 do
  local it = item(s, i)
  if nx and present(f, it) then out[i + 1] = 0 else out[i + 1] = insert(f, it, maxbytes) end
end
save(f)
return out
`

// readBody answers per item (ARGV[2], packed hashes): 1 or 0 for
// presence when ARGV[1] is "test", the count when "count".
const readBody = `
local f, code = open()
if not f then return {code} end
local counting, s = ARGV[1] == 'count', ARGV[2]
local out = {0}
for i = 1, #s / 8 do
  local it = item(s, i)
  if counting then out[i + 1] = count(f, it) elseif present(f, it) then out[i + 1] = 1 else out[i + 1] = 0 end
end
return out
`

// deleteBody deletes one copy of each item (ARGV[1], packed hashes), in
// order: per item 1 deleted, 0 not found.
const deleteBody = `
local f, code = open()
if not f then return {code} end
local s = ARGV[1]
local out = {0}
for i = 1, #s / 8 do out[i + 1] = delete(f, item(s, i)) end
save(f)
return out
`

// compactBody is CF.COMPACT.
const compactBody = `
local f, code = open()
if not f then return {code} end
compact(f, true)
save(f)
return {0}
`

// dumpBody answers CF.SCANDUMP at iterator ARGV[1]: {0, next, chunk},
// or for iterator 0 {0, 1, the header's fields}, or {0, 0} at the end
// and for a filter of no items, unless ARGV[2] is "all".
const dumpBody = `
local f, code = open()
if not f then return {code} end
local it = tonumber(ARGV[1])
if (f.items == 0 and ARGV[2] ~= 'all') or it < 0 then return {0, 0} end
if it == 0 then return {0, 1, f.items, f.base, f.deletes, f.nf, f.bs, f.mi, f.exp} end
local off = it - 1
for i = 1, f.nf do
  local size = f.nb[i] * f.bs
  if off < size then
    if size <= 16777216 then return {0, it + size, read(f, f.off[i], size)} end
    local n = math.min(size - off, 16777216)
    return {0, it + n, read(f, f.off[i] + off, n)}
  end
  off = off - size
end
return {0, 0}
`

// chunkBody writes dump chunk ARGV[2] at iterator ARGV[1] > 1, as
// cuckoo.Filter.LoadChunk does.
const chunkBody = `
local f, code = open()
if not f then return {code} end
local it, data = tonumber(ARGV[1]), ARGV[2]
local n = #data
if n == 0 or it <= 0 or it - 1 < n then return {7} end
local off, idx = it - n - 1, 1
for i = 1, f.nf do
  idx = i
  if off < f.nb[i] * f.bs then break end
  off = off - f.nb[i] * f.bs
end
local size = f.nb[idx] * f.bs
if off > size or n > size - off then return {7} end
write(f, f.off[idx] + off, data)
return {0}
`

// keysBody applies ARGV[1] to every key of the filter: "drop" unlinks
// them; "persist" and "pexpireat" (Unix ms ARGV[2], condition ARGV[3],
// "" for none) apply to the metadata key, and when Redis reports a
// change, to every piece too.
const keysBody = `
local f, code = open()
if not f then return {code} end
local all = keys(f)
if ARGV[1] == 'drop' then
  redis.call('UNLINK', unpack(all))
  return {0}
end
local function apply(key, cond)
  if ARGV[1] == 'persist' then return redis.call('PERSIST', key) end
  if cond == '' then return redis.call('PEXPIREAT', key, ARGV[2]) end
  return redis.call('PEXPIREAT', key, ARGV[2], cond)
end
if apply(KEYS[1], ARGV[3]) == 0 then return {8} end
for i = 2, #all do apply(all[i], '') end
return {0}
`

var (
	cuckooCreate  = redis.NewScript(cuckooLib + createBody)
	cuckooInsert  = redis.NewScript(cuckooLib + insertBody)
	cuckooRead    = redis.NewScript(cuckooLib + readBody)
	cuckooDelete  = redis.NewScript(cuckooLib + deleteBody)
	cuckooCompact = redis.NewScript(cuckooLib + compactBody)
	cuckooDump    = redis.NewScript(cuckooLib + dumpBody)
	cuckooChunk   = redis.NewScript(cuckooLib + chunkBody)
	cuckooKeys    = redis.NewScript(cuckooLib + keysBody)
)

// cuckooBatch is the most items one script call takes, so that Redis is
// never busy with one call for more than a few milliseconds.
const cuckooBatch = 2048

// packHashes packs the items' hashes as the scripts read them: 8 bytes
// each, little-endian.
func packHashes(items [][]byte) string {
	b := make([]byte, 8*len(items))
	for i, it := range items {
		binary.LittleEndian.PutUint64(b[8*i:], cuckoo.Hash(it))
	}
	return string(b)
}

// run runs script with args and returns its reply after the code, or
// the error the code means.
func (c *Cuckoo) run(ctx context.Context, verb string, script *redis.Script, args ...any) ([]any, error) {
	_, v, err := c.runCode(ctx, verb, script, args...)
	return v, err
}

// runCode is run that also returns the reply's code.
func (c *Cuckoo) runCode(ctx context.Context, verb string, script *redis.Script, args ...any) (int64, []any, error) {
	v, err := script.Run(ctx, c.client, []string{c.name}, args...).Slice()
	if err != nil {
		if isWrongType(err) {
			err = fmt.Errorf("%w: %w", ErrMetadata, err)
		}
		return 0, nil, fmt.Errorf("redisfilter: %s %q: %w", verb, c.name, err)
	}
	code, ok := int64(-1), len(v) > 0
	if ok {
		code, ok = v[0].(int64)
	}
	if !ok {
		return 0, nil, fmt.Errorf("redisfilter: %s %q: script reply %.100v", verb, c.name, v)
	}
	if err := codeErr(code); err != nil {
		return code, nil, fmt.Errorf("redisfilter: %s %q: %w", verb, c.name, err)
	}
	return code, v[1:], nil
}

// codeErr is the error of a script reply code.
func codeErr(code int64) error {
	switch code {
	case cuckooOK, cuckooUnchanged:
		return nil
	case cuckooMissing:
		return ErrNotFound
	case cuckooExists:
		return ErrExists
	case cuckooWrongKind:
		return fmt.Errorf("%w: the key does not hold a cuckoo filter", ErrMetadata)
	case cuckooMaxFilters:
		return ErrMaxFilters
	case cuckooBadChunk:
		return cuckoo.ErrChunk
	}
	return fmt.Errorf("script reply code %d", code)
}

// ints reads a script reply of integers into dst via set.
func ints(v []any, n int, set func(i int, x int64)) error {
	if len(v) != n {
		return fmt.Errorf("script reply of %d values for %d items", len(v), n)
	}
	for i, x := range v {
		y, ok := x.(int64)
		if !ok {
			return errors.New("script reply of a non-integer")
		}
		set(i, y)
	}
	return nil
}

// batches calls do with the items in batches of at most cuckooBatch,
// each with its offset.
func batches(items [][]byte, do func(from int, batch [][]byte) error) error {
	for from := 0; from < len(items); from += cuckooBatch {
		if err := do(from, items[from:min(from+cuckooBatch, len(items))]); err != nil {
			return err
		}
	}
	return nil
}

func utoa(v uint64) string { return strconv.FormatUint(v, 10) }
