package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// Filter is a Bloom filter kept in Redis. It is safe for concurrent use;
// many Filters (in many processes) may share one filter in Redis.
type Filter struct {
	client  redis.UniversalClient
	name    string
	key     *[16]byte
	refresh time.Duration

	mu      sync.Mutex // guards meta and checked
	meta    *Meta
	checked time.Time
}

// Create makes a new filter called name for n items at false-positive
// rate p and returns it. It fails with ErrExists if the key name exists.
// The shard keys are created by the first writes.
func Create(ctx context.Context, client redis.UniversalClient, name string, n uint64, p float64, opts ...Option) (*Filter, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	s, err := bloom.Size(n, p, o.layout)
	if err != nil {
		return nil, fmt.Errorf("redisfilter: create %q: %w", name, err)
	}
	return createSized(ctx, client, name, s, o)
}

func createSized(ctx context.Context, client redis.UniversalClient, name string, s bloom.Sizing, o options) (*Filter, error) {
	if s.Bytes() > o.maxBytes {
		return nil, fmt.Errorf("redisfilter: create %q: %w: %d bytes, limit %d", name, ErrTooLarge, s.Bytes(), o.maxBytes)
	}
	var check uint32
	if o.key != nil {
		check = bloom.KeyCheck(*o.key)
	}
	m, err := newMeta(name, s, check, o.shardBytes, 1)
	if err != nil {
		return nil, fmt.Errorf("redisfilter: create %q: %w", name, err)
	}
	ok, err := client.SetNX(ctx, name, m.String(), 0).Result()
	if err != nil {
		return nil, fmt.Errorf("redisfilter: create %q: %w", name, err)
	}
	if !ok {
		return nil, fmt.Errorf("redisfilter: create %q: %w", name, ErrExists)
	}
	return &Filter{client: client, name: name, key: o.key, refresh: o.refresh, meta: &m, checked: time.Now()}, nil
}

// Open returns the filter called name, reading its metadata. It fails
// with ErrNotFound if there is none, ErrMetadata if the key holds
// something else, and ErrKeyRequired or ErrWrongKey on a key mismatch.
func Open(ctx context.Context, client redis.UniversalClient, name string, opts ...Option) (*Filter, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	f := &Filter{client: client, name: name, key: o.key, refresh: o.refresh}
	m, err := f.readMeta(ctx)
	if err != nil {
		return nil, err
	}
	f.meta, f.checked = m, time.Now()
	return f, nil
}

func (f *Filter) readMeta(ctx context.Context) (*Meta, error) {
	text, err := f.client.Get(ctx, f.name).Result()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisfilter: open %q: %w", f.name, ErrNotFound)
	}
	if err != nil {
		if isWrongType(err) {
			return nil, fmt.Errorf("redisfilter: open %q: %w: the key is not a string (a scalable filter's is a hash: use OpenScalable)", f.name, ErrMetadata)
		}
		return nil, fmt.Errorf("redisfilter: open %q: %w", f.name, err)
	}
	m, err := parseMeta(text)
	if err != nil {
		return nil, fmt.Errorf("redisfilter: open %q: %w", f.name, err)
	}
	if err := keyMismatch(f.key, m.KeyCheck); err != nil {
		return nil, fmt.Errorf("redisfilter: open %q: %w", f.name, err)
	}
	return &m, nil
}

func isWrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE")
}

// current returns the metadata, re-reading it when older than the refresh
// interval (a failed re-read keeps the old one: the data keys still
// answer).
func (f *Filter) current(ctx context.Context) *Meta {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refresh > 0 && time.Since(f.checked) > f.refresh {
		f.checked = time.Now()
		if m, err := f.readMeta(ctx); err == nil {
			f.meta = m
		}
	}
	return f.meta
}

func (f *Filter) setMeta(m *Meta) {
	f.mu.Lock()
	f.meta, f.checked = m, time.Now()
	f.mu.Unlock()
}

// Name is the filter's name (its metadata key).
func (f *Filter) Name() string { return f.name }

// Meta returns the filter's metadata as last read.
func (f *Filter) Meta() Meta {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.meta
}

// Sizing is the filter's geometry.
func (f *Filter) Sizing() bloom.Sizing { return f.Meta().Sizing }

func (f *Filter) hash(item []byte) bloom.Hash {
	if f.key != nil {
		return bloom.KeyedHash(*f.key, item)
	}
	return bloom.HashBytes(item)
}

// Add inserts item with one atomic BITFIELD command (one round trip) and
// reports whether it was new: whether any of its bits was unset.
func (f *Filter) Add(ctx context.Context, item []byte) (bool, error) {
	r, err := f.run(ctx, [][]byte{item}, true)
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// Exists reports whether item may be in the filter (one round trip).
func (f *Filter) Exists(ctx context.Context, item []byte) (bool, error) {
	r, err := f.run(ctx, [][]byte{item}, false)
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// AddMany inserts items and reports for each whether it was new (a
// repeat within the batch reports false). It takes one pipelined round
// trip per node holding a shard the items touch (per MaxBatch items).
func (f *Filter) AddMany(ctx context.Context, items [][]byte) ([]bool, error) {
	return f.run(ctx, items, true)
}

// ExistsMany reports for each item whether it may be in the filter, in
// one pipelined round trip per node involved (per MaxBatch items). On a
// blocked filter that is one GETRANGE per block, or per run of blocks at
// most a few hundred bytes apart; otherwise BITFIELD_RO commands.
func (f *Filter) ExistsMany(ctx context.Context, items [][]byte) ([]bool, error) {
	return f.run(ctx, items, false)
}
