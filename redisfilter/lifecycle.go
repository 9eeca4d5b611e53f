package redisfilter

import (
	"context"
	"fmt"
	"time"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// Expire sets a time to live on every key of the filter (its shards, then
// its metadata); ttl ≤ 0 removes it (PERSIST).
func (f *Filter) Expire(ctx context.Context, ttl time.Duration) error {
	m := f.current(ctx)
	keys := append(append([]string(nil), m.Shards...), f.name)
	if err := expireKeys(ctx, f.client, keys, ttl); err != nil {
		return fmt.Errorf("redisfilter: expire %q: %w", f.name, err)
	}
	return nil
}

// Delete removes the filter: its shards first, then its metadata.
func (f *Filter) Delete(ctx context.Context) error {
	m := f.current(ctx)
	if err := delKeys(ctx, f.client, m.Shards); err != nil {
		return fmt.Errorf("redisfilter: delete %q: %w", f.name, err)
	}
	if err := f.client.Del(ctx, f.name).Err(); err != nil {
		return fmt.Errorf("redisfilter: delete %q: %w", f.name, err)
	}
	return nil
}

// delKeys unlinks keys one command each (they live in different slots).
func delKeys(ctx context.Context, client redis.UniversalClient, keys []string) error {
	_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Unlink(ctx, k)
		}
		return nil
	})
	return err
}

// Info describes a filter's state.
type Info struct {
	Meta
	SetBits      uint64  // bits set (BITCOUNT over the shards)
	Fill         float64 // SetBits / bits
	Count        float64 // estimated distinct items, from the fill
	EstimatedFPR float64 // the rate now, from the fill
	TTL          time.Duration
}

// Info reads the filter's parameters and counts its set bits (BITCOUNT,
// one command per shard: O(size) work in Redis).
func (f *Filter) Info(ctx context.Context) (Info, error) {
	m, err := f.readMeta(ctx)
	if err != nil {
		return Info{}, err
	}
	f.setMeta(m)
	var counts []*redis.IntCmd
	var ttl *redis.DurationCmd
	_, err = f.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range m.Shards {
			counts = append(counts, p.BitCount(ctx, k, nil))
		}
		ttl = p.PTTL(ctx, f.name)
		return nil
	})
	if err != nil {
		return Info{}, fmt.Errorf("redisfilter: info %q: %w", f.name, err)
	}
	in := Info{Meta: *m}
	for _, c := range counts {
		in.SetBits += uint64(c.Val())
	}
	if d := ttl.Val(); d > 0 {
		in.TTL = d
	}
	in.Fill = float64(in.SetBits) / float64(m.Sizing.Bits)
	in.Count, in.EstimatedFPR = bloom.EstimateFromFill(m.Sizing, in.SetBits)
	return in, nil
}
