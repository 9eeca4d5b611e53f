package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/bloomery/bloom/cuckoo"
	"github.com/redis/go-redis/v9"
)

// Cuckoo is a cuckoo filter kept in Redis strings and a hash, with the
// semantics and bytes of package cuckoo's in-memory Filter (RedisBloom's
// CF.*; docs/CUCKOO.md): the same hash, fingerprints, bucket choice,
// kick-out and undo, growth, deletion and compaction, counts and Info,
// so that the same operations in the same order leave a Cuckoo and a
// cuckoo.Filter with the same bytes, and ScanDump gives RedisBloom's
// CF.SCANDUMP chunks.
//
// Every operation is one Lua script call (EVALSHA, sent again with EVAL
// after NOSCRIPT) that reads the metadata and works on the buckets in
// one atomic step, so any number of clients may share a filter: no item
// is lost or counted twice, and a test never sees a fingerprint half
// moved by a kick. Items are hashed here (MurmurHash64A, 8 bytes sent
// per item); a batch of n items (AddMany, TestMany, DeleteMany, Insert)
// takes ⌈n/2048⌉ round trips, a single item one. Info is one HGETALL;
// ScanDump one script call per chunk (a chunk is at most 16 MiB).
//
// Keys: the metadata is a hash named after the filter (fields format,
// buckets, bucketsize, maxiter, expansion, filters, items, deletes,
// piece, prefix, id). The buckets of all sub-filters, one after another
// as in the dump, are cut into pieces of at most the shard size
// (WithShardBytes, rounded down to whole buckets), piece p in the string
// "<prefix><p>"; the prefix carries the name's cluster hash tag and a
// random id ("{seen}:5f3a9b1c:0"), so all keys of a filter lie in one
// slot of a Redis Cluster, on one node. Scripts build the piece keys
// from the prefix rather than list them in KEYS (a filter's pieces grow
// inside a script); Redis runs such scripts on the node of KEYS[1]'s
// slot, which holds them all.
//
// Limits: a filter is at most WithMaxBytes bytes of buckets (default
// DefaultMaxBytes, at most cuckooMaxBytes: 2⁵⁰): CreateCuckoo refuses a
// larger one with ErrTooLarge before writing anything, and an insert
// that would grow past it answers cuckoo.GrowFailed. A sub-filter's
// bytes are allocated (zero) when it is made, as RedisBloom does. Redis
// must not evict a filter's keys (no allkeys-* maxmemory policy).
//
// Concurrency: a Cuckoo holds no state but its name and options; it is
// safe for concurrent use, and any number of them, in any processes, may
// share one filter.
type Cuckoo struct {
	client   redis.UniversalClient
	name     string
	o        options
	maxBytes uint64
}

// cuckooFormat is the "format" field of a cuckoo filter's metadata.
const cuckooFormat = "bloomery-cuckoo 1"

// cuckooMaxBytes bounds WithMaxBytes for a Cuckoo, so that every offset
// the scripts compute is exact in Lua's doubles.
const cuckooMaxBytes = 1 << 50

// ErrMaxFilters reports an insert refused because the filter has as many
// sub-filters as CuckooInsert.MaxFilters allows (RedisBloom's "Maximum
// expansions reached").
var ErrMaxFilters = errors.New("redisfilter: the cuckoo filter has the most sub-filters allowed")

// CuckooAt returns a handle on the cuckoo filter called name, without
// asking Redis: calls on a missing filter fail with ErrNotFound (Insert
// may create it). Of opts, WithMaxBytes (the limit of growth and of
// creation), WithShardBytes and the creation options WithBucketSize,
// WithMaxIterations and WithExpansion apply.
func CuckooAt(client redis.UniversalClient, name string, opts ...Option) (*Cuckoo, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Cuckoo{client: client, name: name, o: o, maxBytes: min(o.maxBytes, cuckooMaxBytes)}, nil
}

// CreateCuckoo makes a new cuckoo filter called name for about capacity
// items, as CF.RESERVE does (cuckoo.New's geometry: the next power of two
// ≥ capacity/bucketSize buckets), and returns it. Errors: ErrExists if
// the key exists; an error wrapping cuckoo.ErrInvalid for parameters out
// of range, ErrTooLarge past WithMaxBytes (nothing written then).
func CreateCuckoo(ctx context.Context, client redis.UniversalClient, name string, capacity uint64, opts ...Option) (*Cuckoo, error) {
	c, err := CuckooAt(client, name, opts...)
	if err != nil {
		return nil, err
	}
	fields, err := c.newFields(capacity)
	if err != nil {
		return nil, err
	}
	if _, err := c.run(ctx, "create", cuckooCreate, fields...); err != nil {
		return nil, err
	}
	return c, nil
}

// OpenCuckoo returns the cuckoo filter called name after checking that
// it exists (ErrNotFound) and is a cuckoo filter (ErrMetadata). Of opts,
// WithMaxBytes applies.
func OpenCuckoo(ctx context.Context, client redis.UniversalClient, name string, opts ...Option) (*Cuckoo, error) {
	c, err := CuckooAt(client, name, opts...)
	if err != nil {
		return nil, err
	}
	if _, err := c.Info(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Name is the filter's name (its metadata key).
func (c *Cuckoo) Name() string { return c.name }

// newFields is the metadata of a new filter of capacity, made with the
// handle's options, checked against the limits.
func (c *Cuckoo) newFields(capacity uint64) ([]any, error) {
	in, err := cuckoo.Plan(capacity, append(c.o.cuckoo[:len(c.o.cuckoo):len(c.o.cuckoo)], cuckoo.WithMaxBytes(c.maxBytes))...)
	if err != nil {
		err = fmt.Errorf("redisfilter: create %q: %w", c.name, err)
		if errors.Is(err, cuckoo.ErrTooLarge) {
			err = fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
		return nil, err
	}
	return c.fields(in)
}

// fields is the metadata of a filter described by in.
func (c *Cuckoo) fields(in cuckoo.Info) ([]any, error) {
	id, err := randomID()
	if err != nil {
		return nil, err
	}
	prefix, err := subPrefix(c.name, id)
	if err != nil {
		return nil, err
	}
	piece := c.o.shardBytes / in.BucketSize * in.BucketSize
	return []any{
		"format", cuckooFormat, "buckets", utoa(in.Buckets), "bucketsize", utoa(in.BucketSize),
		"maxiter", utoa(in.MaxIterations), "expansion", utoa(in.Expansion), "filters", utoa(in.Filters),
		"items", utoa(in.Items), "deletes", utoa(in.Deleted), "piece", utoa(piece), "prefix", prefix, "id", id,
	}, nil
}

// Info describes the filter as CF.INFO does (one HGETALL).
func (c *Cuckoo) Info(ctx context.Context) (cuckoo.Info, error) {
	h, err := c.client.HGetAll(ctx, c.name).Result()
	switch {
	case isWrongType(err):
		return cuckoo.Info{}, fmt.Errorf("redisfilter: info %q: %w: the key is not a hash", c.name, ErrMetadata)
	case err != nil:
		return cuckoo.Info{}, fmt.Errorf("redisfilter: info %q: %w", c.name, err)
	case len(h) == 0:
		return cuckoo.Info{}, fmt.Errorf("redisfilter: info %q: %w", c.name, ErrNotFound)
	case h["format"] != cuckooFormat:
		return cuckoo.Info{}, fmt.Errorf("redisfilter: info %q: %w: format %.40q, not a cuckoo filter", c.name, ErrMetadata, h["format"])
	}
	in, err := parseCuckooMeta(h)
	if err != nil {
		return cuckoo.Info{}, fmt.Errorf("redisfilter: info %q: %w: %w", c.name, ErrMetadata, err)
	}
	return in, nil
}

// parseCuckooMeta reads the metadata's counters and geometry, and checks
// them as a dump header is checked.
func parseCuckooMeta(h map[string]string) (cuckoo.Info, error) {
	var v [7]uint64
	for i, f := range [...]string{"items", "buckets", "deletes", "filters", "bucketsize", "maxiter", "expansion"} {
		var err error
		if v[i], err = strconv.ParseUint(h[f], 10, 64); err != nil {
			return cuckoo.Info{}, fmt.Errorf("field %s: %w", f, err)
		}
	}
	if v[4] > 0xffff || v[5] > 0xffff || v[6] > 0xffff {
		return cuckoo.Info{}, errors.New("bucket size, iterations or expansion past 16 bits")
	}
	hdr := cuckoo.Info{Items: v[0], Buckets: v[1], Deleted: v[2], Filters: v[3], BucketSize: v[4], MaxIterations: v[5], Expansion: v[6]}
	return cuckoo.ParseDumpHeader(hdr.DumpHeader(), cuckoo.WithMaxBytes(cuckooMaxBytes))
}
