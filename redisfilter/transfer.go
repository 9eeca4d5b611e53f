package redisfilter

import (
	"context"
	"fmt"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// Upload replaces the filter's bits with those of src, which must have the
// same geometry and hash (made with bloom.NewSized(f.Sizing()) or loaded
// from a file of the same filter). It copies TransferChunk bytes per
// SETRANGE command, so Redis is never blocked long; readers may see a mix
// of old and new bits while it runs (use Rotate to switch atomically).
func (f *Filter) Upload(ctx context.Context, src *bloom.Filter) error {
	m := f.current(ctx)
	if err := compatible(m, src); err != nil {
		return fmt.Errorf("redisfilter: upload to %q: %w", f.name, err)
	}
	return uploadShards(ctx, f.client, m, src, m.Shards)
}

func compatible(m *Meta, src *bloom.Filter) error {
	s := src.Sizing()
	if s.Layout != m.Sizing.Layout || s.Bits != m.Sizing.Bits || s.K != m.Sizing.K {
		return fmt.Errorf("%w: %v into %v", ErrIncompatible, s, m.Sizing)
	}
	if src.KeyCheck() != m.KeyCheck {
		return fmt.Errorf("%w: the hash keys differ", ErrIncompatible)
	}
	return nil
}

// uploadShards writes src's bytes into the shard keys keys (of m's
// geometry).
func uploadShards(ctx context.Context, client redis.UniversalClient, m *Meta, src *bloom.Filter, keys []string) error {
	buf := make([]byte, min(TransferChunk, src.Bytes()))
	for i, key := range keys {
		base := uint64(i) * m.ShardBits / 8
		for off := uint64(0); off < m.shardLen(i); off += uint64(len(buf)) {
			chunk := buf[:min(uint64(len(buf)), m.shardLen(i)-off)]
			if n, err := src.ReadAt(chunk, int64(base+off)); n < len(chunk) {
				return fmt.Errorf("reading the filter at %d: %w", base+off, err)
			}
			if err := client.SetRange(ctx, key, int64(off), string(chunk)).Err(); err != nil {
				return fmt.Errorf("shard %s at %d: %w", key, off, err)
			}
		}
	}
	return nil
}

// Download returns an in-memory copy of the filter (bloom.NewSized of its
// geometry, with its key), read TransferChunk bytes per GETRANGE. Writes
// made while it runs may or may not be included.
func (f *Filter) Download(ctx context.Context, opts ...bloom.Option) (*bloom.Filter, error) {
	m := f.current(ctx)
	if f.key != nil {
		opts = append(opts, bloom.WithKey(*f.key))
	}
	dst, err := bloom.NewSized(m.Sizing, opts...)
	if err != nil {
		return nil, fmt.Errorf("redisfilter: download %q: %w", f.name, err)
	}
	for i, key := range m.Shards {
		base := uint64(i) * m.ShardBits / 8
		for off := uint64(0); off < m.shardLen(i); off += TransferChunk {
			end := min(off+TransferChunk, m.shardLen(i)) - 1
			s, err := f.client.GetRange(ctx, key, int64(off), int64(end)).Result()
			if err != nil {
				return nil, fmt.Errorf("redisfilter: download %q: shard %s at %d: %w", f.name, key, off, err)
			}
			if s == "" { // the rest of the shard was never written: zeros
				break
			}
			if _, err := dst.WriteAt([]byte(s), int64(base+off)); err != nil {
				return nil, fmt.Errorf("redisfilter: download %q: %w", f.name, err)
			}
		}
	}
	return dst, nil
}

// CreateFrom makes a new filter called name with src's geometry, hash key
// (pass WithKey with src's key for a keyed filter) and bits.
func CreateFrom(ctx context.Context, client redis.UniversalClient, name string, src *bloom.Filter, opts ...Option) (*Filter, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	if (o.key == nil) != !src.Keyed() || (o.key != nil && bloom.KeyCheck(*o.key) != src.KeyCheck()) {
		return nil, fmt.Errorf("redisfilter: create %q: %w: pass WithKey with the filter's key", name, ErrIncompatible)
	}
	f, err := createSized(ctx, client, name, src.Sizing(), o)
	if err != nil {
		return nil, err
	}
	if err := f.Upload(ctx, src); err != nil {
		return nil, err
	}
	return f, nil
}
