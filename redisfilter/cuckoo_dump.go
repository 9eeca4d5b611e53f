package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bloomery/bloom/cuckoo"
	"github.com/redis/go-redis/v9"
)

// ScanDump answers CF.SCANDUMP at iterator it ≥ 0, in RedisBloom's chunk
// format (docs/CUCKOO.md §6; cuckoo.Filter.ScanDump): (1, the 38-byte
// header) for 0, then the sub-filters' bytes in chunks of at most 16
// MiB, each with the iterator of the next, and (0, nil) past the last
// and for a filter holding no items. One script call per chunk, each
// atomic; a scan is a snapshot only if nobody writes meanwhile.
func (c *Cuckoo) ScanDump(ctx context.Context, it int64) (next int64, data []byte, err error) {
	return c.dump(ctx, it, "")
}

// dump is ScanDump, of an empty filter too when all is "all".
func (c *Cuckoo) dump(ctx context.Context, it int64, all string) (int64, []byte, error) {
	v, err := c.run(ctx, "dump", cuckooDump, it, all)
	if err != nil {
		return 0, nil, err
	}
	if len(v) == 8 && it == 0 {
		var f [7]uint64
		if err := ints(v[1:], 7, func(i int, x int64) { f[i] = uint64(x) }); err != nil {
			return 0, nil, fmt.Errorf("redisfilter: dump %q: %w", c.name, err)
		}
		in := cuckoo.Info{Items: f[0], Buckets: f[1], Deleted: f[2], Filters: f[3], BucketSize: f[4], MaxIterations: f[5], Expansion: f[6]}
		return 1, in.DumpHeader(), nil
	}
	next, ok := int64(0), len(v) >= 1
	if ok {
		next, ok = v[0].(int64)
	}
	if !ok || (next == 0) != (len(v) == 1) {
		return 0, nil, fmt.Errorf("redisfilter: dump %q: script reply of %d values", c.name, len(v))
	}
	if next == 0 {
		return 0, nil, nil
	}
	s, ok := v[1].(string)
	if !ok {
		return 0, nil, fmt.Errorf("redisfilter: dump %q: a chunk that is not a string", c.name)
	}
	return next, []byte(s), nil
}

// LoadChunk restores a chunk of a dump, as CF.LOADCHUNK does: at
// iterator 1 the header, which makes the filter with the header's
// counters and empty sub-filters (ErrExists if the key holds a cuckoo
// filter, ErrMetadata if something else; then an error wrapping
// cuckoo.ErrFormat for a header RedisBloom refuses, ErrTooLarge past
// WithMaxBytes); at another iterator a chunk of the sub-filters' bytes,
// which must fit in one sub-filter (cuckoo.ErrChunk; see
// cuckoo.Filter.LoadChunk). One script call.
func (c *Cuckoo) LoadChunk(ctx context.Context, it int64, data []byte) error {
	if it != 1 {
		_, err := c.run(ctx, "load", cuckooChunk, it, data)
		return err
	}
	in, err := cuckoo.ParseDumpHeader(data, cuckoo.WithMaxBytes(c.maxBytes))
	if err != nil {
		if _, ierr := c.Info(ctx); !errors.Is(ierr, ErrNotFound) {
			if ierr == nil {
				ierr = fmt.Errorf("redisfilter: load %q: %w", c.name, ErrExists)
			}
			return ierr
		}
		if errors.Is(err, cuckoo.ErrTooLarge) {
			err = fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
		return fmt.Errorf("redisfilter: load %q: %w", c.name, err)
	}
	fields, err := c.fields(in)
	if err != nil {
		return err
	}
	_, err = c.run(ctx, "load", cuckooCreate, fields...)
	return err
}

// Download copies the filter into a new in-memory cuckoo.Filter with the
// same bytes and counters (WithMaxBytes applies), one script call per
// chunk of at most 16 MiB. It is a consistent copy only if nobody writes
// to the filter meanwhile.
func (c *Cuckoo) Download(ctx context.Context) (*cuckoo.Filter, error) {
	_, hdr, err := c.dump(ctx, 0, "all")
	if err != nil {
		return nil, err
	}
	f, err := cuckoo.LoadDumpHeader(hdr, cuckoo.WithMaxBytes(c.maxBytes))
	if err != nil {
		return nil, fmt.Errorf("redisfilter: download %q: %w", c.name, err)
	}
	for it := int64(1); ; {
		next, data, err := c.dump(ctx, it, "all")
		if err != nil {
			return nil, err
		}
		if next == 0 {
			return f, nil
		}
		if err := f.LoadChunk(next, data); err != nil {
			return nil, fmt.Errorf("redisfilter: download %q: the filter changed meanwhile: %w", c.name, err)
		}
		it = next
	}
}

// UploadCuckoo makes a new cuckoo filter called name holding f's bytes
// and counters, so that it answers as f does, and returns it: the
// header, then one script call per chunk of at most 16 MiB. Other
// clients may see the filter before its last chunk is in. ErrExists if
// the key exists; WithMaxBytes and WithShardBytes apply.
func UploadCuckoo(ctx context.Context, client redis.UniversalClient, name string, f *cuckoo.Filter, opts ...Option) (*Cuckoo, error) {
	c, err := CuckooAt(client, name, opts...)
	if err != nil {
		return nil, err
	}
	if err := c.LoadChunk(ctx, 1, f.DumpHeader()); err != nil {
		return nil, err
	}
	for it := int64(1); ; {
		next, data := f.DumpChunk(it)
		if next == 0 {
			return c, nil
		}
		if err := c.LoadChunk(ctx, next, data); err != nil {
			return nil, err
		}
		it = next
	}
}

// Drop removes the filter: its metadata and all its pieces, in one
// atomic script call. ErrNotFound if there is none.
func (c *Cuckoo) Drop(ctx context.Context) error {
	_, err := c.run(ctx, "drop", cuckooKeys, "drop")
	return err
}

// ExpireAt makes every key of the filter expire at time at (PEXPIREAT on
// Redis's clock) if cond allows, in one atomic script call, and reports
// whether it did, as Scalable.ExpireAt does. A piece made later by growth
// gets the metadata's remaining time.
func (c *Cuckoo) ExpireAt(ctx context.Context, at time.Time, cond ExpireCondition) (bool, error) {
	code, _, err := c.runCode(ctx, "expire", cuckooKeys, "pexpireat", at.UnixMilli(), string(cond))
	return err == nil && code == cuckooOK, err
}

// Persist removes the filter's expiry from all its keys, atomically, and
// reports whether it had one. ErrNotFound if there is no filter.
func (c *Cuckoo) Persist(ctx context.Context) (bool, error) {
	code, _, err := c.runCode(ctx, "persist", cuckooKeys, "persist")
	return err == nil && code == cuckooOK, err
}
