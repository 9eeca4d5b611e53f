package server

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// The keyspace commands on the Redis backend: they see only filters.

// areFilters reports for each key whether it holds a filter (Bloom or
// cuckoo), in one pipelined round trip on c (per node, in a cluster).
func areFilters(ctx context.Context, c redis.Cmdable, keys []string) ([]bool, error) {
	cmds := make([]*redis.StringCmd, len(keys))
	c.Pipelined(ctx, func(p redis.Pipeliner) error { // errors are read per command
		for i, k := range keys {
			cmds[i] = redisfilter.CheckScalable(ctx, p, k)
		}
		return nil
	})
	out := make([]bool, len(keys))
	for i, cmd := range cmds {
		kind, err := redisfilter.KindOf(cmd)
		if err != nil {
			return nil, err
		}
		out[i] = kind != redisfilter.NotAFilter
	}
	return out, nil
}

func (r *redisStore) CountExisting(ctx context.Context, keys []string) (int, error) {
	found, err := areFilters(ctx, r.client, keys)
	return countTrue(found), err
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// Delete deletes each filter with one atomic script call (two when a
// Bloom filter is not cached, or for a cuckoo filter); keys of other
// types are left alone and not counted.
func (r *redisStore) Delete(ctx context.Context, keys []string) (int, error) {
	n := 0
	for _, k := range keys {
		f, err := r.open(ctx, k)
		if err == nil {
			err = r.checked(k, f, f.Delete(ctx))
		} else if err == errWrongType {
			err = cuckooError(r.cuckooAt(k, nil).Drop(ctx))
		}
		switch {
		case gone(err):
		case err != nil:
			return n, err
		default:
			r.cache.drop(k, f)
			n++
		}
	}
	return n, nil
}

// Type is "MBbloom--" for a Bloom filter, "MBbloomCF" for a cuckoo
// filter, else Redis's TYPE of the key (so a WRONGTYPE answer can be
// explained).
func (r *redisStore) Type(ctx context.Context, key string) (string, error) {
	var check *redis.StringCmd
	var typ *redis.StatusCmd
	r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		check = redisfilter.CheckScalable(ctx, p, key)
		typ = p.Type(ctx, key)
		return nil
	})
	switch kind, err := redisfilter.KindOf(check); {
	case err != nil || kind == redisfilter.ScalableKind:
		return typeName, err
	case kind == redisfilter.CuckooKind:
		return typeNameCuckoo, nil
	}
	return typ.Result()
}

func (r *redisStore) Rename(context.Context, string, string) error { return errRenameUnsupported }

// redisConds are the conditions of PExpireAt in redisfilter's terms.
var redisConds = [...]redisfilter.ExpireCondition{
	expireAlways: redisfilter.ExpireAlways, expireNX: redisfilter.ExpireNX, expireXX: redisfilter.ExpireXX,
	expireGT: redisfilter.ExpireGT, expireLT: redisfilter.ExpireLT,
}

// PExpireAt checks cond and sets the expiry of all the filter's keys in
// one atomic script call (Redis's PEXPIREAT conditions on the metadata
// key).
func (r *redisStore) PExpireAt(ctx context.Context, key string, at int64, cond expireCond) (bool, error) {
	return r.changeTime(ctx, key, func(f timed) (bool, error) {
		return f.ExpireAt(ctx, time.UnixMilli(at), redisConds[cond])
	})
}

func (r *redisStore) Persist(ctx context.Context, key string) (bool, error) {
	return r.changeTime(ctx, key, func(f timed) (bool, error) { return f.Persist(ctx) })
}

// timed is a filter whose keys expire together: a redisfilter.Scalable
// or Cuckoo.
type timed interface {
	ExpireAt(ctx context.Context, at time.Time, cond redisfilter.ExpireCondition) (bool, error)
	Persist(ctx context.Context) (bool, error)
}

// changeTime runs change on key's filter, Bloom or (one more round trip)
// cuckoo; a key without one answers false.
func (r *redisStore) changeTime(ctx context.Context, key string, change func(timed) (bool, error)) (bool, error) {
	f, err := r.open(ctx, key)
	var done bool
	switch {
	case err == nil:
		done, err = change(f)
		err = r.checked(key, f, err)
	case err == errWrongType:
		done, err = change(r.cuckooAt(key, nil))
		err = cuckooError(err)
	}
	if gone(err) {
		return false, nil
	}
	return done, err
}

func (r *redisStore) PTTL(ctx context.Context, key string) (int64, error) {
	return r.keyTime(ctx, key, "PTTL")
}

func (r *redisStore) ExpireTime(ctx context.Context, key string) (int64, error) {
	return r.keyTime(ctx, key, "PEXPIRETIME")
}

// keyTime asks Redis cmd (PTTL or PEXPIRETIME) about the metadata key of
// key's filter, -2 when there is none, in one round trip.
func (r *redisStore) keyTime(ctx context.Context, key, cmd string) (int64, error) {
	var check *redis.StringCmd
	var v *redis.Cmd
	r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		check = redisfilter.CheckScalable(ctx, p, key)
		v = p.Do(ctx, cmd, key)
		return nil
	})
	if kind, err := redisfilter.KindOf(check); kind == redisfilter.NotAFilter || err != nil {
		return -2, err
	}
	return v.Int64()
}

// nodes returns the Redis servers holding keys: the one server, or each
// master of a cluster, in the order of their addresses (a scan cursor
// names one by its index).
func (r *redisStore) nodes(ctx context.Context) ([]*redis.Client, error) {
	if r.cluster == nil {
		return []*redis.Client{r.client.(*redis.Client)}, nil
	}
	var mu sync.Mutex
	var out []*redis.Client
	err := r.cluster.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, c)
		return nil
	})
	slices.SortFunc(out, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	return out, err
}

// Scan runs one Redis SCAN … COUNT count TYPE hash (with MATCH pattern)
// on one node and keeps the keys that hold filters (one more pipelined
// round trip). Its cost is Redis's: a full pass visits every key of the
// Redis, filters or not, so KEYS, DBSIZE and FLUSHALL take time in
// proportion to all the data in Redis. In a cluster the cursor is
// Redis's cursor × masters + the index of the master being scanned (in
// address order): it stays valid while the set of masters does not
// change. Like SCAN, a call may return fewer keys than count, or none,
// before the end.
func (r *redisStore) Scan(ctx context.Context, cursor uint64, pattern string, count int) (uint64, []string, error) {
	nodes, err := r.nodes(ctx)
	if err != nil {
		return 0, nil, err
	}
	n := uint64(len(nodes))
	i, c := cursor%n, cursor/n
	node := nodes[i]
	hashes, next, err := node.ScanType(ctx, c, pattern, int64(count), "hash").Result()
	if err != nil {
		return 0, nil, err
	}
	found, err := areFilters(ctx, node, hashes)
	if err != nil {
		return 0, nil, err
	}
	keys := make([]string, 0, countTrue(found))
	for j, k := range hashes {
		if found[j] {
			keys = append(keys, k)
		}
	}
	if next == 0 {
		if i++; i == n {
			return 0, keys, nil
		}
	}
	if next > (math.MaxUint64-i)/n {
		return 0, nil, fmt.Errorf("server: Redis's scan cursor %d does not fit with %d masters", next, n)
	}
	return next*n + i, keys, nil
}

// eachFilter calls fn with every filter's key, a batch at a time, by a
// full scan (see Scan for its cost).
func (r *redisStore) eachFilter(ctx context.Context, fn func(keys []string) error) error {
	for cursor := uint64(0); ; {
		next, keys, err := r.Scan(ctx, cursor, "", 1000)
		if err == nil {
			err = fn(keys)
		}
		if err != nil || next == 0 {
			return err
		}
		cursor = next
	}
}

// DBSize counts the filters with a full scan of Redis (see Scan); INFO's
// keyspace section shows the last count.
func (r *redisStore) DBSize(ctx context.Context) (int64, error) {
	var n int64
	err := r.eachFilter(ctx, func(keys []string) error { n += int64(len(keys)); return nil })
	if err != nil {
		return 0, err
	}
	r.keys.Store(n)
	return n, nil
}

// Flush deletes every filter, found by a full scan (see Scan), each with
// one script call: other data in the Redis is never touched. It is not
// atomic: a filter made by another server during the scan may survive.
func (r *redisStore) Flush(ctx context.Context) error {
	err := r.eachFilter(ctx, func(keys []string) error {
		_, err := r.Delete(ctx, keys)
		return err
	})
	if err != nil {
		return err
	}
	r.cache.clear()
	r.keys.Store(0)
	return nil
}
