package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// ErrConflict: another client rotated or deleted the filter while Rotate
// was building the next generation; the new generation was discarded.
var ErrConflict = errors.New("redisfilter: filter changed during rotation")

// Rotate replaces the filter's contents with a new generation, built by
// fill (which calls add with batches of items) under new shard keys while
// readers keep using the current one, then switches the metadata to it
// with one atomic compare-and-set (WATCH/MULTI on the metadata key, which
// works on Redis Cluster too). Readers in other processes follow within
// their refresh interval (WithRefresh); the old generation's keys expire
// after twice that interval plus a second, so a reader that has not yet
// switched never reads a missing key. A TTL on the filter carries over.
//
// Items added by other clients while Rotate runs go to the old generation
// and are not in the new one: fill from the source of truth, and include
// what arrives meanwhile if that matters.
func (f *Filter) Rotate(ctx context.Context, fill func(add func(items [][]byte) error) error) error {
	return f.rotate(ctx, func(next *Filter) error {
		return fill(func(items [][]byte) error {
			_, err := next.AddMany(ctx, items)
			return err
		})
	})
}

// RotateFrom is Rotate with the new generation uploaded from src, which
// must have the filter's geometry and key (see Upload).
func (f *Filter) RotateFrom(ctx context.Context, src *bloom.Filter) error {
	return f.rotate(ctx, func(next *Filter) error {
		m := next.Meta()
		if err := compatible(&m, src); err != nil {
			return err
		}
		return uploadShards(ctx, next.client, &m, src, m.Shards)
	})
}

func (f *Filter) rotate(ctx context.Context, build func(next *Filter) error) error {
	cur, err := f.readMeta(ctx)
	if err != nil {
		return fmt.Errorf("redisfilter: rotate: %w", err)
	}
	next := *cur
	next.Generation++
	next.Shards = shardKeys(f.name, next.Generation, uint64(len(cur.Shards)))
	ttl, err := f.client.PTTL(ctx, f.name).Result()
	if err != nil {
		return fmt.Errorf("redisfilter: rotate %q: %w", f.name, err)
	}
	// Leftovers of an earlier, interrupted rotation to the same generation.
	if err := delKeys(ctx, f.client, next.Shards); err != nil {
		return fmt.Errorf("redisfilter: rotate %q: %w", f.name, err)
	}
	discard := func(cause error) error {
		if err := delKeys(context.WithoutCancel(ctx), f.client, next.Shards); err != nil {
			return fmt.Errorf("redisfilter: rotate %q: %w (and removing the new generation: %v)", f.name, cause, err)
		}
		return fmt.Errorf("redisfilter: rotate %q: %w", f.name, cause)
	}
	nf := &Filter{client: f.client, name: f.name, key: f.key, meta: &next}
	if err := build(nf); err != nil {
		return discard(err)
	}
	if ttl > 0 {
		if err := expireKeys(ctx, f.client, next.Shards, ttl); err != nil {
			return discard(err)
		}
	}
	text := next.String()
	err = f.client.Watch(ctx, func(tx *redis.Tx) error {
		now, err := tx.Get(ctx, f.name).Result()
		if errors.Is(err, redis.Nil) {
			return ErrConflict
		}
		if err != nil {
			return err
		}
		if now != cur.String() {
			return ErrConflict
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SetArgs(ctx, f.name, text, redis.SetArgs{KeepTTL: true})
			return nil
		})
		return err
	}, f.name)
	if errors.Is(err, redis.TxFailedErr) {
		err = ErrConflict
	}
	if err != nil {
		return discard(err)
	}
	f.setMeta(&next)
	grace := 2*max(f.refresh, DefaultRefresh) + time.Second
	if err := expireKeys(ctx, f.client, cur.Shards, grace); err != nil {
		return fmt.Errorf("redisfilter: rotate %q: switched, but expiring the old generation: %w", f.name, err)
	}
	return nil
}

// expireKeys sets ttl on each key, one pipelined PEXPIRE each (PERSIST
// when ttl ≤ 0).
func expireKeys(ctx context.Context, client redis.UniversalClient, keys []string, ttl time.Duration) error {
	_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			if ttl > 0 {
				p.PExpire(ctx, k, ttl)
			} else {
				p.Persist(ctx, k)
			}
		}
		return nil
	})
	return err
}
