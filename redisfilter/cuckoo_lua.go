package redisfilter

// The Lua side of Cuckoo: package cuckoo's algorithms (docs/CUCKOO.md
// §3–4) over bucket bytes kept in Redis strings. Redis's Lua numbers are
// doubles, so a 64-bit item hash comes as two 32-bit halves (packed
// little-endian in one string argument, 8 bytes per item) and the
// arithmetic stays below 2^53: a bucket index reduced modulo a bucket
// count is below it (a filter has at most cuckooMaxBytes bytes), and
// fp·0x5bd1e995 is below 2^39. XOR works on 32-bit halves (bit.bxor).
//
// The filter's bytes, every sub-filter's buckets one after another (the
// dump's data chunks), are cut into pieces of `piece` bytes (a multiple
// of the bucket size, so no bucket straddles two), piece p in the string
// prefix..p. Bytes past the last sub-filter are zero: a sub-filter is
// freed only when compaction has emptied it.
//
// Every script's KEYS[1] is the metadata hash; the piece keys are built
// from its prefix, which carries the name's hash tag, so a cluster runs
// the script on the node of the filter's slot. Every reply starts with a
// code (cuckooOK …).
const cuckooLib = `
local P32 = 4294967296
local MUL = 1540483477
local Z = '\0'
local changed = false

local function open()
  local v = redis.pcall('HMGET', KEYS[1], 'format', 'buckets', 'bucketsize', 'maxiter', 'expansion',
    'filters', 'items', 'deletes', 'piece', 'prefix')
  if v.err then return nil, 5 end
  if not v[1] then return nil, 3 end
  if v[1] ~= 'bloomery-cuckoo 1' then return nil, 5 end
  local f = {base = tonumber(v[2]), bs = tonumber(v[3]), mi = tonumber(v[4]), exp = tonumber(v[5]),
    nf = tonumber(v[6]), items = tonumber(v[7]), deletes = tonumber(v[8]), piece = tonumber(v[9]),
    prefix = v[10], nb = {}, off = {}}
  local nb, off = f.base, 0
  for i = 1, f.nf do
    f.nb[i], f.off[i] = nb, off
    off = off + nb * f.bs
    nb = nb * f.exp
  end
  f.total = off
  return f
end

local function num(x) return string.format('%.0f', x) end

local function save(f)
  if changed then
    redis.call('HSET', KEYS[1], 'filters', num(f.nf), 'items', num(f.items), 'deletes', num(f.deletes))
  end
end

-- (hi·2^32 + lo) mod n, for n < 2^53
local function mod64(hi, lo, n)
  if n <= P32 and P32 % n == 0 then return lo % n end
  if n > P32 and n % P32 == 0 then return (hi % (n / P32)) * P32 + lo end
  local r = hi % n
  if n <= 2097152 then
    r = (r * P32) % n
  else
    for _ = 1, 32 do r = (r * 2) % n end
  end
  return (r + lo) % n
end

-- c XOR fp·0x5bd1e995, for c < 2^53
local function alt(fp, c)
  local m = fp * MUL
  local chi, clo = math.floor(c / P32), c % P32
  return (bit.bxor(chi, math.floor(m / P32)) % P32) * P32 + bit.bxor(clo, m % P32) % P32
end

-- the item i of the packed hashes s: its fingerprint and both bucket hashes as halves
local function item(s, i)
  local lo, hi = struct.unpack('<I4I4', s, 8 * i - 7)
  local fp = (hi + lo) % 255 + 1
  local m = fp * MUL
  return {fp = fp, hi = hi, lo = lo, hi2 = bit.bxor(hi, math.floor(m / P32)) % P32, lo2 = bit.bxor(lo, m % P32) % P32}
end

local function buckets(f, i, it)
  local n = f.nb[i]
  return mod64(it.hi, it.lo, n), mod64(it.hi2, it.lo2, n)
end

-- the key and offset of bucket b of sub-filter i
local function addr(f, i, b)
  local x = f.off[i] + b * f.bs
  local p = math.floor(x / f.piece)
  return f.prefix .. num(p), x - p * f.piece
end

local function bucket(f, i, b)
  local k, o = addr(f, i, b)
  return redis.call('GETRANGE', k, o, o + f.bs - 1), k, o
end

-- stores fp in the first empty slot of bucket b of sub-filter i, if any
local function put(f, i, b, fp)
  local s, k, o = bucket(f, i, b)
  local j = string.find(s, Z, 1, true)
  if not j then return false end
  redis.call('SETRANGE', k, o + j - 1, string.char(fp))
  return true
end

local function place(f, i, b1, b2, fp)
  return put(f, i, b1, fp) or put(f, i, b2, fp)
end

local function swap(f, i, b, j, fp)
  local k, o = addr(f, i, b)
  local old = string.byte(redis.call('GETRANGE', k, o + j, o + j))
  redis.call('SETRANGE', k, o + j, string.char(fp))
  return old
end

local function kick(f, it)
  local n, bs = f.nf, f.bs
  local size = f.nb[n]
  local fp, c, victim = it.fp, mod64(it.hi, it.lo, size), 0
  for _ = 1, f.mi do
    fp = swap(f, n, c, victim, fp)
    c = alt(fp, c) % size
    if put(f, n, c, fp) then return true end
    victim = (victim + 1) % bs
  end
  for _ = 1, f.mi do
    victim = (victim + bs - 1) % bs
    c = alt(fp, c) % size
    fp = swap(f, n, c, victim, fp)
  end
  return false
end

-- makes the pieces hold the bytes [from, f.total), zero; a new piece
-- gets the metadata's time to live
local function extend(f, from)
  if f.total <= from then return end
  local ttl = redis.call('PTTL', KEYS[1])
  for p = math.floor(from / f.piece), math.floor((f.total - 1) / f.piece) do
    local want = math.min(f.piece, f.total - p * f.piece)
    local k = f.prefix .. num(p)
    local have = redis.call('STRLEN', k)
    if have < want then redis.call('SETRANGE', k, want - 1, Z) end
    if have == 0 and ttl > 0 then redis.call('PEXPIRE', k, ttl) end
  end
end

-- the n bytes of the filter from offset x, across pieces
local function read(f, x, n)
  local parts = {}
  while n > 0 do
    local p = math.floor(x / f.piece)
    local o = x - p * f.piece
    local m = math.min(n, f.piece - o)
    parts[#parts + 1] = redis.call('GETRANGE', f.prefix .. num(p), o, o + m - 1)
    x, n = x + m, n - m
  end
  return table.concat(parts)
end

-- writes data at offset x of the filter's bytes, across pieces
local function write(f, x, data)
  local from = 1
  while from <= #data do
    local p = math.floor(x / f.piece)
    local o = x - p * f.piece
    local m = math.min(#data - from + 1, f.piece - o)
    redis.call('SETRANGE', f.prefix .. num(p), o, string.sub(data, from, from + m - 1))
    x, from = x + m, from + m
  end
end

-- the keys of the filter: metadata, then pieces
local function keys(f)
  local out = {KEYS[1]}
  for p = 0, math.ceil(f.total / f.piece) - 1 do out[#out + 1] = f.prefix .. num(p) end
  return out
end

local function grow(f, maxbytes)
  if f.nf >= 65535 then return false end
  local nb = f.nb[f.nf] * f.exp
  if nb < 1 or nb >= 72057594037927936 or nb * f.bs > maxbytes - f.total then return false end
  local from = f.total
  f.nf = f.nf + 1
  f.nb[f.nf], f.off[f.nf] = nb, from
  f.total = from + nb * f.bs
  extend(f, from)
  changed = true
  return true
end

local function present(f, it)
  local c = string.char(it.fp)
  for i = 1, f.nf do
    local b1, b2 = buckets(f, i, it)
    if string.find(bucket(f, i, b1), c, 1, true) or string.find(bucket(f, i, b2), c, 1, true) then
      return true
    end
  end
  return false
end

-- insert: 1 stored, -1 no space, -2 growth failed
local function insert(f, it, maxbytes)
  while true do
    for i = f.nf, 1, -1 do
      local b1, b2 = buckets(f, i, it)
      if place(f, i, b1, b2, it.fp) then
        f.items = f.items + 1
        changed = true
        return 1
      end
    end
    if kick(f, it) then
      f.items = f.items + 1
      changed = true
      return 1
    end
    if f.exp == 0 then return -1 end
    if not grow(f, maxbytes) then return -2 end
  end
end

-- moves what it can of sub-filter k into older ones; frees it when
-- everything moved and it is the newest
local function compactOne(f, k)
  local all, bs = true, f.bs
  local first, last = f.off[k], f.off[k] + f.nb[k] * bs
  local x = first
  while x < last do
    local p = math.floor(x / f.piece)
    local key, o = f.prefix .. num(p), x - p * f.piece
    local n = math.min(last - x, f.piece - o, 65536 * bs)
    local s = redis.call('GETRANGE', key, o, o + n - 1)
    local j = string.find(s, '[^%z]')
    while j do
      local fp = string.byte(s, j)
      local b = math.floor((x + j - 1 - first) / bs)
      local moved = false
      for i = 1, k - 1 do
        local size = f.nb[i]
        if place(f, i, b % size, alt(fp, b) % size, fp) then moved = true break end
      end
      if moved then redis.call('SETRANGE', key, o + j - 1, Z) else all = false end
      j = string.find(s, '[^%z]', j + 1)
    end
    x = x + n
  end
  if all and k == f.nf then
    f.nf, f.total = k - 1, first
    f.nb[k], f.off[k] = nil, nil
    local p = math.ceil(first / f.piece)
    while redis.call('DEL', f.prefix .. num(p)) == 1 do p = p + 1 end
  end
  return all
end

local function compact(f, cont)
  for k = f.nf, 2, -1 do
    if not compactOne(f, k) and not cont then break end
  end
  f.deletes = 0
  changed = true
end

local function delete(f, it)
  local c = string.char(it.fp)
  for i = f.nf, 1, -1 do
    local b1, b2 = buckets(f, i, it)
    for _, b in ipairs({b1, b2}) do
      local s, k, o = bucket(f, i, b)
      local j = string.find(s, c, 1, true)
      if j then
        redis.call('SETRANGE', k, o + j - 1, Z)
        f.items, f.deletes = f.items - 1, f.deletes + 1
        changed = true
        if f.nf > 1 and f.deletes > f.items * 0.10 then compact(f, false) end
        return 1
      end
    end
  end
  return 0
end

local function count(f, it)
  local c, n = string.char(it.fp), 0
  for i = 1, f.nf do
    local b1, b2 = buckets(f, i, it)
    for _, b in ipairs({b1, b2}) do
      local s = bucket(f, i, b)
      local j = string.find(s, c, 1, true)
      while j do
        n = n + 1
        j = string.find(s, c, j + 1, true)
      end
    end
  end
  return n
end
`
