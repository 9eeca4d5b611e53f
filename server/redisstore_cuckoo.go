package server

import (
	"context"
	"errors"

	"github.com/bloomery/bloom/cuckoo"
	"github.com/bloomery/bloom/redisfilter"
)

// The CF.* commands on the Redis backend: every cuckoo filter is a
// redisfilter.Cuckoo, whose operations are one atomic script call each
// (per 2048 items), so a command is one round trip to Redis, also CF.ADD
// and CF.INSERT on a missing key (the script creates the filter), and
// any number of servers may share the filters. The server keeps nothing
// of them. A key that holds anything but a cuckoo filter (a Bloom
// filter, other data) is of another type, as in the memory backend.

// redisCuckoo is the Redis backend's cuckooStore.
type redisCuckoo struct{ *redisStore }

// cuckooOptions are the options of a cuckoo filter made with o (nil:
// none made).
func (r *redisStore) cuckooOptions(o *cuckooOpts) []redisfilter.Option {
	opts := r.opts
	if o != nil {
		opts = append(opts[:len(opts):len(opts)], redisfilter.WithBucketSize(o.bucketSize),
			redisfilter.WithMaxIterations(o.maxIterations), redisfilter.WithExpansion(o.expansion))
	}
	return opts
}

// cuckooAt is the handle on key's cuckoo filter, with o as the options of
// a filter the call may create (nil: none).
func (r *redisStore) cuckooAt(key string, o *cuckooOpts) *redisfilter.Cuckoo {
	c, err := redisfilter.CuckooAt(r.client, key, r.cuckooOptions(o)...)
	if err != nil { // the options are the server's own: a bug
		panic(err)
	}
	return c
}

// cuckooError maps an error of redisfilter's Cuckoo to its reply.
func cuckooError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redisfilter.ErrNotFound):
		return errNotFound
	case errors.Is(err, redisfilter.ErrMetadata):
		return errWrongType
	case errors.Is(err, redisfilter.ErrExists):
		return errItemExists
	case errors.Is(err, redisfilter.ErrMaxFilters):
		return errMaxExpansions
	case errors.Is(err, redisfilter.ErrTooLarge), errors.Is(err, cuckoo.ErrTooLarge), errors.Is(err, cuckoo.ErrInvalid):
		return errNoMemory
	case errors.Is(err, cuckoo.ErrChunk):
		return errCFChunk
	case errors.Is(err, cuckoo.ErrFormat):
		return errCFCreate
	}
	return err
}

// orIfGone is cuckooError of err, with instead for a missing key or one
// of another type.
func orIfGone(err, instead error) error {
	if err = cuckooError(err); gone(err) {
		return instead
	}
	return err
}

func (r redisCuckoo) Reserve(ctx context.Context, key string, o cuckooOpts) error {
	_, err := redisfilter.CreateCuckoo(ctx, r.client, key, o.capacity, r.cuckooOptions(&o)...)
	return cuckooError(err)
}

func (r redisCuckoo) Add(ctx context.Context, key string, items [][]byte, a cuckooAdd, res []cuckoo.Status) error {
	in := redisfilter.CuckooInsert{Unique: a.nx, MaxFilters: maxCuckooFilters}
	if a.create != nil {
		in.CreateCapacity = a.create.capacity
	}
	st, err := r.cuckooAt(key, a.create).Insert(ctx, items, in)
	copy(res, st)
	return cuckooError(err)
}

func (r redisCuckoo) Exists(ctx context.Context, key string, items [][]byte, found []bool) error {
	got, err := r.cuckooAt(key, nil).TestMany(ctx, items)
	if err = orIfGone(err, nil); err != nil || got == nil {
		clear(found)
		return err
	}
	copy(found, got)
	return nil
}

func (r redisCuckoo) Count(ctx context.Context, key string, item []byte) (uint64, error) {
	n, err := r.cuckooAt(key, nil).Count(ctx, item)
	return n, orIfGone(err, nil)
}

func (r redisCuckoo) Delete(ctx context.Context, key string, item []byte) (bool, error) {
	ok, err := r.cuckooAt(key, nil).Delete(ctx, item)
	return ok, orIfGone(err, errCFNotFound)
}

func (r redisCuckoo) Info(ctx context.Context, key string) (cuckooInfo, error) {
	in, err := r.cuckooAt(key, nil).Info(ctx)
	return in, cuckooError(err)
}

func (r redisCuckoo) Compact(ctx context.Context, key string) error {
	return orIfGone(r.cuckooAt(key, nil).Compact(ctx), errCFNoFilter)
}

func (r redisCuckoo) ScanDump(ctx context.Context, key string, iter int64) (int64, []byte, error) {
	next, chunk, err := r.cuckooAt(key, nil).ScanDump(ctx, iter)
	return next, chunk, cuckooError(err)
}

func (r redisCuckoo) LoadChunk(ctx context.Context, key string, iter int64, chunk []byte) error {
	err := cuckooError(r.cuckooAt(key, nil).LoadChunk(ctx, iter, chunk))
	if err == errCFCreate && iter == 1 && len(chunk) != cuckoo.DumpHeaderSize {
		return errCFHeader
	}
	return err
}
