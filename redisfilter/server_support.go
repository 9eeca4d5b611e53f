package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// What a server keeping many scalable filters in one Redis needs (the
// redis backend of bloomery serve): a cheap test of whether a key holds a
// scalable filter, Open and Info in one round trip, and expiry with
// Redis's conditions and answers.

// CheckScalable queues on c (a client or a pipeline) the read that tells
// whether name holds a scalable filter's metadata (HGET name format);
// IsScalable reads its answer. Scanning code uses it to pick the filters
// out of other keys without opening each one.
func CheckScalable(ctx context.Context, c redis.Cmdable, name string) *redis.StringCmd {
	return c.HGet(ctx, name, "format")
}

// IsScalable reports whether the command CheckScalable queued found a
// scalable filter's metadata. A missing key or a key of another type is
// false, without error; only a failure to ask (a network error) is an
// error. The metadata is not checked beyond its format field: OpenScalable
// of a damaged filter can still fail with ErrMetadata.
func IsScalable(cmd *redis.StringCmd) (bool, error) {
	k, err := KindOf(cmd)
	return k == ScalableKind, err
}

// Kind is the kind of filter a key holds, as KindOf reads it.
type Kind int

// The kinds of key KindOf tells apart.
const (
	NotAFilter   Kind = iota // missing, another type, or a hash of something else
	ScalableKind             // a Scalable's metadata
	CuckooKind               // a Cuckoo's metadata
)

// KindOf reads the answer of the command CheckScalable queued (HGET name
// format): which kind of filter the key holds. Errors as IsScalable.
func KindOf(cmd *redis.StringCmd) (Kind, error) {
	v, err := cmd.Result()
	switch {
	case errors.Is(err, redis.Nil), isWrongType(err):
		return NotAFilter, nil
	case err != nil:
		return NotAFilter, err
	case v == scalableFormat, v == scalableFormatSmall:
		return ScalableKind, nil
	case v == cuckooFormat:
		return CuckooKind, nil
	}
	return NotAFilter, nil
}

// OpenScalableInfo is OpenScalable followed by Info, in the round trip of
// Info alone: it returns the filter and its description.
func OpenScalableInfo(ctx context.Context, client redis.UniversalClient, name string, opts ...Option) (*Scalable, ScalableInfo, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, ScalableInfo{}, err
	}
	s := &Scalable{client: client, name: name, key: o.key, maxBytes: o.maxBytes}
	in, err := s.Info(ctx)
	if err != nil {
		return nil, ScalableInfo{}, err
	}
	return s, in, nil
}

// ExpireCondition is a condition of ExpireAt: Redis's PEXPIREAT options.
type ExpireCondition string

const (
	ExpireAlways ExpireCondition = ""   // set the expiry in any case
	ExpireNX     ExpireCondition = "NX" // only if the filter has none
	ExpireXX     ExpireCondition = "XX" // only if it has one
	ExpireGT     ExpireCondition = "GT" // only if later than the current one (none counts as infinite)
	ExpireLT     ExpireCondition = "LT" // only if earlier than the current one (none counts as infinite)
)

// ExpireAt makes every key of the filter expire at time at (Redis's
// PEXPIREAT, millisecond precision, on Redis's clock), if cond allows, in
// one atomic script call; it reports whether it did, as PEXPIREAT answers.
// A time in the past deletes the filter (and answers true). The condition
// is Redis's own, applied to the metadata key; conditions other than
// ExpireAlways need Redis 7.0 or later. A sub-filter opened later gets the
// metadata's remaining time. A missing filter is ErrNotFound.
func (s *Scalable) ExpireAt(ctx context.Context, at time.Time, cond ExpireCondition) (bool, error) {
	return s.runTimeKeys(ctx, "expire", "pexpireat", at.UnixMilli(), cond)
}

// Persist removes the filter's expiry from all its keys, atomically, and
// reports whether it had one (Redis's PERSIST). A missing filter is
// ErrNotFound.
func (s *Scalable) Persist(ctx context.Context) (bool, error) {
	return s.runTimeKeys(ctx, "persist", "persist", 0, ExpireAlways)
}

// timeKeysLua applies ARGV[3] ("persist", or "pexpireat" at Unix ms
// ARGV[4] with the condition ARGV[5], "" for none) to the metadata key,
// and when Redis reports a change, to every sub-filter too (KEYS:
// metadata and all sub-filters), if the caller's view (id ARGV[1],
// sub-filters ARGV[2]) is current. Reply 0 done, 1 stale view, 3 no
// filter, 4 nothing changed (the condition refused, or no expiry to
// remove). A time in the past deletes each key, as PEXPIREAT does.
const timeKeysLua = `
local st = redis.call('HMGET', KEYS[1], 'id', 'filters')
if not st[1] then return 3 end
if st[1] ~= ARGV[1] or st[2] ~= ARGV[2] then return 1 end
local function apply(key, cond)
  if ARGV[3] == 'persist' then return redis.call('PERSIST', key) end
  if cond == '' then return redis.call('PEXPIREAT', key, ARGV[4]) end
  return redis.call('PEXPIREAT', key, ARGV[4], cond)
end
if apply(KEYS[1], ARGV[5]) == 0 then return 4 end
for i = 2, #KEYS do apply(KEYS[i], '') end
return 0
`

var timeKeysScript = redis.NewScript(timeKeysLua)

// codeUnchanged is timeKeysLua's answer when the condition refused.
const codeUnchanged = 4

// runTimeKeys runs the time-keys script with op, re-reading the metadata
// while the view is stale, and reports whether it changed the filter.
func (s *Scalable) runTimeKeys(ctx context.Context, verb, op string, ms int64, cond ExpireCondition) (bool, error) {
	m := s.view()
	for range maxStale {
		args := []any{m.id, strconv.Itoa(len(m.subs)), op, strconv.FormatInt(ms, 10), string(cond)}
		code, err := timeKeysScript.Run(ctx, s.client, m.keys(s.name, len(m.subs)), args...).Int64()
		if err != nil {
			return false, fmt.Errorf("redisfilter: %s %q: %w", verb, s.name, s.scriptErr(err))
		}
		switch code {
		case codeDone, codeUnchanged:
			return code == codeDone, nil
		case codeNotFound:
			return false, fmt.Errorf("redisfilter: %s %q: %w", verb, s.name, ErrNotFound)
		}
		if m, err = s.refresh(ctx); err != nil {
			return false, err
		}
	}
	return false, fmt.Errorf("redisfilter: %s %q: the metadata changed %d times", verb, s.name, maxStale)
}
