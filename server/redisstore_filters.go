package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/redisfilter"
)

// The BF.* commands on the Redis backend.

// raceAttempts bounds the retries of a command that finds its key
// created or deleted by another server between two of its calls.
const raceAttempts = 10

// errRenameUnsupported is RENAME's answer: a filter's keys share its
// name's cluster slot and are named after it, so it cannot move.
const errRenameUnsupported replyError = "ERR RENAME is not supported by the redis backend"

// redisError maps an error of redisfilter to its reply (other errors,
// such as a lost connection, answer "ERR " and their text).
func redisError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redisfilter.ErrNotFound):
		return errNotFound
	case errors.Is(err, redisfilter.ErrMetadata), errors.Is(err, redisfilter.ErrKeyRequired),
		errors.Is(err, redisfilter.ErrWrongKey):
		return errWrongType
	case errors.Is(err, bloom.ErrFull):
		return errFull
	case errors.Is(err, redisfilter.ErrTooLarge), errors.Is(err, bloom.ErrTooLarge):
		return errNoMemory
	}
	return err
}

// gone reports whether err (mapped) says that key holds no filter.
func gone(err error) bool { return err == errNotFound || err == errWrongType }

// checked maps err of a call on f, key's cached filter (nil: whatever
// is cached), and forgets f when the key holds no filter any more.
func (r *redisStore) checked(key string, f *redisfilter.Scalable, err error) error {
	err = redisError(err)
	if gone(err) {
		r.cache.drop(key, f)
	}
	return err
}

// open returns key's filter: errNotFound, or errWrongType for a key of
// another type. A cached filter is returned unchecked.
func (r *redisStore) open(ctx context.Context, key string) (*redisfilter.Scalable, error) {
	if f := r.cache.get(key); f != nil {
		return f, nil
	}
	return r.load(ctx, key)
}

// load opens key's filter, reading its metadata, and caches it.
func (r *redisStore) load(ctx context.Context, key string) (*redisfilter.Scalable, error) {
	f, err := redisfilter.OpenScalable(ctx, r.client, key, r.opts...)
	if err != nil {
		return nil, r.checked(key, nil, err)
	}
	r.cache.put(key, f)
	return f, nil
}

// create makes key's filter with o: errItemExists if there is one,
// errWrongType if the key holds something else.
func (r *redisStore) create(ctx context.Context, key string, o createOpts) (*redisfilter.Scalable, error) {
	if err := o.creatable(); err != nil {
		return nil, err
	}
	for range raceAttempts {
		f, err := redisfilter.CreateScalable(ctx, r.client, key, o.capacity, o.rate, append([]redisfilter.Option{redisfilter.WithGrowth(o.growth())}, r.opts...)...)
		if err == nil {
			r.cache.put(key, f)
			return f, nil
		}
		if !errors.Is(err, redisfilter.ErrExists) {
			return nil, redisError(err)
		}
		switch _, err = r.load(ctx, key); err {
		case nil:
			return nil, errItemExists
		case errNotFound: // deleted meanwhile: again
		default:
			return nil, err
		}
	}
	return nil, fmt.Errorf("server: create %q: the key kept changing", key)
}

// openOrCreate opens key's filter, or creates it with *o when missing (o
// nil: errNotFound); a filter made by another server meanwhile is opened.
func (r *redisStore) openOrCreate(ctx context.Context, key string, o *createOpts) (*redisfilter.Scalable, error) {
	for range raceAttempts {
		f, err := r.open(ctx, key)
		if err != errNotFound || o == nil {
			return f, err
		}
		if f, err = r.create(ctx, key, *o); err != errItemExists {
			return f, err
		}
	}
	return nil, fmt.Errorf("server: open %q: the key kept changing", key)
}

func (r *redisStore) Reserve(ctx context.Context, key string, o createOpts) error {
	_, err := r.create(ctx, key, o)
	return err
}

// addAlone is Add without coalescing, for one command, going on from
// its item n (the items before it are answered).
func (r *redisStore) addAlone(ctx context.Context, key string, items [][]byte, create *createOpts, res []addResult, n int) (int, error) {
	for range raceAttempts {
		f, err := r.openOrCreate(ctx, key, create)
		if err != nil {
			return n, err
		}
		isNew, err := f.AddMany(ctx, items[n:])
		setAddResults(res[n:], isNew)
		n += len(isNew)
		switch err = r.checked(key, f, err); err {
		case errNotFound: // deleted meanwhile: made again
		case errFull, errNoMemory: // the filter could not take item n
			return n, itemError{err.(replyError)}
		default:
			return n, err
		}
	}
	return n, fmt.Errorf("server: add to %q: the key kept changing", key)
}

// info describes key's filter with a fresh read of its metadata.
func (r *redisStore) info(ctx context.Context, key string) (redisfilter.ScalableInfo, error) {
	if f := r.cache.get(key); f != nil {
		in, err := f.Info(ctx)
		return in, r.checked(key, f, err)
	}
	f, in, err := redisfilter.OpenScalableInfo(ctx, r.client, key, r.opts...)
	if err != nil {
		return in, r.checked(key, nil, err)
	}
	r.cache.put(key, f)
	return in, nil
}

func (r *redisStore) Info(ctx context.Context, key string) (filterInfo, error) {
	in, err := r.info(ctx, key)
	return infoOf(in.ScalableInfo, in.Layout), err
}

func (r *redisStore) Debug(ctx context.Context, key string) (filterDebug, error) {
	in, err := r.info(ctx, key)
	if err != nil {
		return filterDebug{}, err
	}
	d := filterDebug{Items: in.Items}
	for _, sub := range in.Subs {
		d.Subs = append(d.Subs, subDebugOf(sub.Sizing, sub.Items))
	}
	return d, nil
}

func (r *redisStore) Card(ctx context.Context, key string) (uint64, error) {
	in, err := r.info(ctx, key)
	if err == errNotFound {
		return 0, nil
	}
	return in.Items, err
}

// ScanDump and LoadChunk of Bloom filters are not supported (a dump made
// chunk by chunk from Redis would not be a consistent copy while other
// servers write);
// ScanDump first looks the key up, as RedisBloom does, so a missing key
// is still "ERR not found".
func (r *redisStore) ScanDump(ctx context.Context, key string, _ int64) (int64, []byte, error) {
	if _, err := r.info(ctx, key); err != nil {
		return 0, nil, err
	}
	return 0, nil, errNotSupported
}

// LoadChunk answers WRONGTYPE for a key of another type (a cuckoo
// filter, other data), as RedisBloom does, else errNotSupported.
func (r *redisStore) LoadChunk(ctx context.Context, key string, _ int64, _ []byte) error {
	if _, err := r.info(ctx, key); err == errWrongType {
		return err
	}
	return errNotSupported
}
