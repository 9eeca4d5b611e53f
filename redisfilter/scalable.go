package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// Scalable is a scalable Bloom filter kept in Redis, with the growth and
// counting rules of bloom.Scalable: its sub-filters are those of the
// in-memory Scalable with the same parameters (bloom.ScalablePlan), with
// the same hash and bits, so for the same items in the same order both
// answer alike and count alike. With bloom.Growth.RedisBloom its
// counters (BF.INFO's Capacity, Number of filters, Number of items
// inserted, Expansion rate) are RedisBloom's for the same commands, also
// with many clients adding at once.
//
// Why a script: an Add must test every sub-filter and, for a new item, set
// its bits in the last one, count it, and open a new sub-filter when the
// last one holds its capacity, all as one step, or concurrent clients
// count an item twice, miss a growth or grow twice. An optimistic
// transaction (WATCH/MULTI) over the counters that every new item
// changes would make concurrent adders conflict on nearly every call. A
// Lua script does the whole step atomically and takes a batch in one
// call (a chunk of at most 8192 bit offsets), without retries; it is run
// by SHA and sent again on NOSCRIPT. But a script's calls cost Redis
// about three times what the same commands cost sent by the client, so
// AddMany sends a batch of 8 items or more that the last sub-filter can
// take whole as a transaction whose first command, a small script,
// checks the client's view and the room left and counts the batch
// (scalable_fast.go): with WATCH on the last sub-filter, whose blocks it
// reads, and writes back changed (scalable_watch.go), or, when another
// client writes the same filter, setting each bit with BITFIELD; the
// script adds the rest and grows the filter. A Scalable given a budget
// (WithMirrors) keeps a copy of the filter's bits and sends such a batch
// with no reads at all, one round trip, as long as no other client has
// written the filter since its copy (scalable_mirror.go). Reads need no script:
// Exists reads the bitmaps (GETRANGE of the item's block in each blocked
// sub-filter, BITFIELD_RO of its bits in a classic one) in one pipelined
// round trip, which also checks that the client's list of sub-filters is
// current (scalable_exists.go).
//
// Keys: the metadata is a hash named after the filter (see the fields in
// scalable_meta.go); sub-filter i is a bitmap "<prefix><i>", where the
// prefix carries the name's cluster hash tag and a random id made by
// CreateScalable ("{seen}:5f3a9b1c:0"). All keys of a filter lie in one
// slot, so a scalable filter does not shard: it lives on one node of a
// Redis Cluster, and each sub-filter must fit one Redis string (512 MiB:
// about 400 million items at a rate of 0.01); growth beyond fails with
// ErrTooLarge. Use a Filter (Create) for larger sets of known size. As
// for every filter here, Redis must not evict its keys (no allkeys-*
// maxmemory policy): a lost sub-filter loses items.
//
// Concurrency: a Scalable is safe for concurrent use, and any number of
// Scalables, in any processes, may share one filter in Redis. Items are
// never lost across growth: a client whose list of sub-filters is out of
// date re-reads the metadata before it answers.
type Scalable struct {
	client   redis.UniversalClient
	name     string
	key      *[16]byte
	maxBytes uint64

	mu   sync.Mutex // guards meta
	meta *scalableMeta

	watchOff atomic.Int64 // Unix ns before which AddMany sends no watched write (scalable_watch.go)

	// The copy of the filter's bits (scalable_mirror.go); mirrors nil:
	// none.
	mirrors  *Mirrors
	mirMu    sync.Mutex // guards the fields below and the copy's bits, token and tail
	mir      *mirror
	mirLive  atomic.Pointer[mirror] // mir, for mirrorView
	mirOff   time.Time              // no copy is loaded before
	mirPause time.Duration          // the last pause after another client's write
}

// maxStale bounds the metadata re-reads of one call.
const maxStale = 100

// CreateScalable makes a new scalable filter called name, with initial
// capacity n0 and compound false-positive rate p, growing as so says
// (bloom.NewScalable's options), and returns it. It fails with ErrExists
// if the key name exists. Of opts, WithLayout, WithKey and WithMaxBytes
// (the total of all sub-filters) apply.
func CreateScalable(ctx context.Context, client redis.UniversalClient, name string, n0 uint64, p float64,
	opts ...Option) (*Scalable, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	plan, err := bloom.NewScalablePlan(n0, p, bloom.WithGrowth(o.growth), bloom.WithLayout(o.layout))
	if err != nil {
		return nil, fmt.Errorf("redisfilter: create %q: %w", name, err)
	}
	var check uint32
	if o.key != nil {
		check = bloom.KeyCheck(*o.key)
	}
	m, err := newScalableMeta(name, plan, check, o.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("redisfilter: create %q: %w", name, err)
	}
	made, err := createScript.Run(ctx, client, []string{name, m.subKey(0)}, m.fields()...).Int64()
	if err != nil {
		return nil, fmt.Errorf("redisfilter: create %q: %w", name, err)
	}
	if made == 0 {
		return nil, fmt.Errorf("redisfilter: create %q: %w", name, ErrExists)
	}
	return &Scalable{client: client, name: name, key: o.key, maxBytes: o.maxBytes, meta: m, mirrors: o.mirrors}, nil
}

// OpenScalable returns the scalable filter called name. It fails with
// ErrNotFound if there is none, ErrMetadata if the key holds something
// else (also a Filter made by Create), and ErrKeyRequired or ErrWrongKey
// on a key mismatch. Of opts, WithKey and WithMaxBytes apply.
func OpenScalable(ctx context.Context, client redis.UniversalClient, name string, opts ...Option) (*Scalable, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	s := &Scalable{client: client, name: name, key: o.key, maxBytes: o.maxBytes, mirrors: o.mirrors}
	if _, err := s.refresh(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// refresh re-reads the metadata and makes it the view.
func (s *Scalable) refresh(ctx context.Context) (*scalableMeta, error) {
	return s.adopt(ctx, s.client.HGetAll(ctx, s.name))
}

// adopt parses the reply of HGETALL name and makes it the view.
func (s *Scalable) adopt(ctx context.Context, cmd *redis.MapStringStringCmd) (*scalableMeta, error) {
	h, err := cmd.Result()
	if err != nil {
		if isWrongType(err) {
			return nil, s.notScalable(ctx)
		}
		return nil, fmt.Errorf("redisfilter: open %q: %w", s.name, err)
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("redisfilter: open %q: %w", s.name, ErrNotFound)
	}
	m, err := parseScalableMeta(s.name, h)
	if err != nil {
		return nil, fmt.Errorf("redisfilter: open %q: %w", s.name, err)
	}
	if err := keyMismatch(s.key, m.keyCheck); err != nil {
		return nil, fmt.Errorf("redisfilter: open %q: %w", s.name, err)
	}
	s.mu.Lock()
	s.meta = m
	s.mu.Unlock()
	return m, nil
}

// notScalable is the error for a name that holds another type.
func (s *Scalable) notScalable(ctx context.Context) error {
	what := "the key is not a hash"
	if text, err := s.client.Get(ctx, s.name).Result(); err == nil && strings.HasPrefix(text, "bloomery-filter ") {
		what = "it is a Filter, not a scalable filter (use Open)"
	}
	return fmt.Errorf("redisfilter: open %q: %w: %s", s.name, ErrMetadata, what)
}

// view is the metadata as last read or written by this client.
func (s *Scalable) view() *scalableMeta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta
}

// grew records that the add script opened the sub-filter next after
// old's, unless the view has moved on meanwhile.
func (s *Scalable) grew(old *scalableMeta, next bloom.Sizing) {
	g := old.grown(next)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta.id == g.id && len(s.meta.subs) < len(g.subs) {
		s.meta = g
	}
}

// Name is the filter's name (its metadata key).
func (s *Scalable) Name() string { return s.name }

func (s *Scalable) hashes(items [][]byte) []bloom.Hash {
	hs := make([]bloom.Hash, len(items))
	for i, it := range items {
		if s.key != nil {
			hs[i] = bloom.KeyedHash(*s.key, it)
		} else {
			hs[i] = bloom.HashBytes(it)
		}
	}
	return hs
}

// Add inserts item and reports whether it was new (in no sub-filter), in
// one atomic script call: one round trip, or three when another client
// has grown the filter since this one last looked (the script refuses
// the out-of-date call, the client re-reads the metadata and calls
// again), or two when this call grows it. A new item that does not
// fit a full non-scaling filter is refused with an error wrapping
// bloom.ErrFull; growth beyond WithMaxBytes or a Redis string fails with
// ErrTooLarge. An item already present answers (false, nil).
func (s *Scalable) Add(ctx context.Context, item []byte) (bool, error) {
	r, err := s.AddMany(ctx, [][]byte{item})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// AddMany adds items in order, each as Add, and reports for each whether
// it was new (a repeat within the batch answers false). A chunk of at
// most 8192 bit offsets in the last sub-filter that it can take whole
// goes as a watched or gated write: two or three round trips (one more
// to read the older sub-filters of a chain), no script call; others take
// one script call per chunk, and one more per growth. Like RedisBloom's
// BF.MADD it stops at the first error:
// it returns the answers for the items before it, so on ErrFull (or
// ErrTooLarge) the item at index len(answers) is the one refused and the
// items after it were not processed. After a network error, the chunk in
// flight may or may not have been added.
func (s *Scalable) AddMany(ctx context.Context, items [][]byte) ([]bool, error) {
	out := make([]bool, 0, len(items))
	hashes := s.hashes(items)
	// withNext: the calls carry the sub-filter a growth would open, once a
	// call has stopped for want of it: most calls need none, and it costs
	// a sizing and the offsets of every item in it.
	withNext := false
	var waited time.Duration
	for stale := 0; len(out) < len(items); {
		m := s.view()
		if !withNext {
			var code int64
			var err error
			if out, code, err = s.addFast(ctx, m, hashes, out); err != nil {
				return out, fmt.Errorf("redisfilter: add to %q: %w", s.name, err)
			}
			switch code {
			case codeDone:
				stale = 0
				continue
			case codeNotFound:
				return out, fmt.Errorf("redisfilter: add to %q: %w", s.name, ErrNotFound)
			case codeStale:
				if err := s.reread(ctx, &stale); err != nil {
					return out, err
				}
				continue
			} // codeNeedsSub: not sent (or no room for it all); the script adds it
		}
		var next *bloom.Sizing
		if withNext {
			sz, err := m.nextSub(s.maxBytes)
			if err != nil {
				return out, fmt.Errorf("redisfilter: add to %q: %w", s.name, err)
			}
			next = &sz
		}
		r, sent, err := s.addChunk(ctx, m, next, hashes[len(out):])
		if err != nil {
			return out, fmt.Errorf("redisfilter: add to %q: %w", s.name, err)
		}
		out = append(out, r.isNew...)
		grew := next != nil && r.code != codeStale && r.filters == len(m.subs)+1
		if grew {
			s.grew(m, *next)
		}
		switch r.code {
		case codeDone:
			if len(r.isNew) != sent {
				return out, fmt.Errorf("redisfilter: add to %q: %d answers for %d items", s.name, len(r.isNew), sent)
			}
			stale, withNext = 0, false
		case codeStale:
			if err := s.reread(ctx, &stale); err != nil {
				return out, err
			}
			withNext = false
		case codeNeedsSub:
			switch {
			case m.plan.Expansion == 0:
				return out, fmt.Errorf("redisfilter: add to %q: %w", s.name, bloom.ErrFull)
			case withNext && !grew:
				return out, fmt.Errorf("redisfilter: add to %q: the script did not grow the filter", s.name)
			}
			withNext = true // also after a growth: the batch fills the new one too
		case codeNotFound:
			return out, fmt.Errorf("redisfilter: add to %q: %w", s.name, ErrNotFound)
		case codeBusy:
			if waited, err = waitBusy(ctx, waited); err != nil {
				return out, fmt.Errorf("redisfilter: add to %q: %w", s.name, err)
			}
		default:
			return out, fmt.Errorf("redisfilter: add to %q: script reply code %d", s.name, r.code)
		}
	}
	return out, nil
}

// reread re-reads the metadata after the stale-th refusal of a stale
// view in a row, up to maxStale.
func (s *Scalable) reread(ctx context.Context, stale *int) error {
	if *stale++; *stale > maxStale {
		return fmt.Errorf("redisfilter: add to %q: the metadata changed %d times", s.name, maxStale)
	}
	_, err := s.refresh(ctx)
	return err
}

// Count is the number of items inserted: adds that reported new (BF.CARD).
func (s *Scalable) Count(ctx context.Context) (uint64, error) {
	v, err := s.client.HGet(ctx, s.name, "items").Uint64()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, fmt.Errorf("redisfilter: count %q: %w", s.name, ErrNotFound)
	case err != nil:
		return 0, fmt.Errorf("redisfilter: count %q: %w", s.name, s.scriptErr(err))
	}
	return v, nil
}

// ScalableInfo describes a scalable filter in Redis. Its embedded
// bloom.ScalableInfo holds BF.INFO's counters.
type ScalableInfo struct {
	bloom.ScalableInfo
	P      float64      // compound false-positive rate
	Layout bloom.Layout // of the filter (Subs: each sub-filter's, classic for a blocked filter's small ones)
	Hash   bloom.HashID
	Subs   []SubFilter
	TTL    time.Duration // 0 when the filter does not expire
}

// SubFilter describes one sub-filter.
type SubFilter struct {
	Key    string // its bitmap
	Sizing bloom.Sizing
	Items  uint64 // items it took
}

// Info reads the filter's metadata (HGETALL and PTTL, one round trip).
func (s *Scalable) Info(ctx context.Context) (ScalableInfo, error) {
	var ttl *redis.DurationCmd
	var all *redis.MapStringStringCmd
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		all = p.HGetAll(ctx, s.name)
		ttl = p.PTTL(ctx, s.name)
		return nil
	})
	if err != nil && all.Err() == nil {
		return ScalableInfo{}, fmt.Errorf("redisfilter: info %q: %w", s.name, err)
	}
	m, err := s.adopt(ctx, all)
	if err != nil {
		return ScalableInfo{}, err
	}
	in := ScalableInfo{
		ScalableInfo: bloom.ScalableInfo{Capacity: m.capacity(), Bytes: m.bytes(), Filters: len(m.subs),
			Items: m.items, Expansion: m.plan.Expansion, NonScaling: m.plan.Expansion == 0},
		P: m.plan.P, Layout: m.plan.Layout, Hash: m.hash,
	}
	for i, sz := range m.subs {
		in.Subs = append(in.Subs, SubFilter{Key: m.subKey(i), Sizing: sz, Items: m.counts[i]})
	}
	if d := ttl.Val(); d > 0 {
		in.TTL = d
	}
	return in, nil
}

// Delete removes the filter: its metadata and all its sub-filters, in
// one atomic script call.
func (s *Scalable) Delete(ctx context.Context) error {
	return s.runKeys(ctx, "delete", "delete", 0)
}

// Expire sets a time to live on every key of the filter, atomically; a
// sub-filter opened later gets the metadata's remaining time. ttl ≤ 0
// removes it (PERSIST).
func (s *Scalable) Expire(ctx context.Context, ttl time.Duration) error {
	if ttl <= 0 {
		return s.runKeys(ctx, "expire", "persist", 0)
	}
	return s.runKeys(ctx, "expire", "pexpire", max(1, ttl.Milliseconds()))
}
