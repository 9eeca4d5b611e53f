// Package redisbench is the harness of cmd/redis: it starts a redis-server
// of its own, and puts go-zero's Redis Bloom filter (core/bloom) and ours
// (redisfilter.Filter, redisfilter.GoZeroFilter) behind one adapter,
// RedisLib, driven from many goroutines by Drive. It is a package of its
// own because go-zero's packages install signal handlers and set
// GOMAXPROCS when imported, which the in-memory benchmarks of package
// bench must not inherit.
package redisbench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom/bench"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
	gzbloom "github.com/zeromicro/go-zero/core/bloom"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
)

// Names of the Redis filters cmd/redis compares.
const (
	RedisGoZero       = "go-zero"         // go-zero's core/bloom.Filter: single calls only
	RedisFilter       = "bloomery"        // redisfilter.Filter, Create(n, p), blocked layout
	RedisGoZeroFilter = "bloomery-gozero" // redisfilter.GoZeroFilter: go-zero's key and bits
)

// RedisLibNames lists the Redis filters in table order.
var RedisLibNames = []string{RedisGoZero, RedisFilter, RedisGoZeroFilter}

// The keys the filters live under. go-zero and GoZeroFilter share one,
// as they share the format.
const (
	redisGoZeroKey = "bench-gozero"
	redisFilterKey = "bench-bloomery"
)

// FillBatch and FillGoroutines are how RedisEnv.Filled adds the keys.
const (
	FillBatch      = 1000
	FillGoroutines = 32
)

// RedisEnv is one redis-server with the two clients cmd/redis uses and
// the sizes of the filters.
type RedisEnv struct {
	Client     *redis.Client // go-redis with default options, for our filters and the harness
	GoZero     *zredis.Redis // go-zero's client, made as go-zero users make theirs
	N          uint64        // our filter's capacity
	P          float64       // our filter's target false-positive rate
	GoZeroBits uint64        // bit count of go-zero's filter (and GoZeroFilter's)
}

// NewRedisEnv connects both clients to addr.
func NewRedisEnv(addr string, n uint64, p float64, goZeroBits uint64) (*RedisEnv, error) {
	z, err := zredis.NewRedis(zredis.RedisConf{Host: addr, Type: zredis.NodeType})
	if err != nil {
		return nil, err
	}
	return &RedisEnv{Client: redis.NewClient(&redis.Options{Addr: addr}), GoZero: z, N: n, P: p, GoZeroBits: goZeroBits}, nil
}

// Close closes our client; go-zero keeps its clients for the process's
// lifetime.
func (e *RedisEnv) Close() error { return e.Client.Close() }

// Flush empties the server (FLUSHALL SYNC).
func (e *RedisEnv) Flush(ctx context.Context) error {
	return e.Client.Do(ctx, "FLUSHALL", "SYNC").Err()
}

// RedisLib is one Redis filter behind one way of calling it: single
// calls (Batch 0) or batches of Batch items (AddMany, ExistsMany).
type RedisLib struct {
	Name  string
	Batch int
	// Add adds items: one call per item, or one call for all.
	Add func(ctx context.Context, items [][]byte) error
	// Exists tests items and returns how many tested positive and how
	// many of the inserted ones among them (bench.IsAbsent false) did not.
	Exists func(ctx context.Context, items [][]byte) (positives, falseNegatives int, err error)
}

// manyFilter is what redisfilter.Filter and GoZeroFilter both offer.
type manyFilter interface {
	Add(ctx context.Context, item []byte) (bool, error)
	Exists(ctx context.Context, item []byte) (bool, error)
	AddMany(ctx context.Context, items [][]byte) ([]bool, error)
	ExistsMany(ctx context.Context, items [][]byte) ([]bool, error)
}

// Open returns the filter name over what Redis holds now, called singly
// (batch 0) or in batches. With create it makes our Filter anew (its
// metadata key must be missing); otherwise it opens the one there. The
// go-zero format needs no creating: its key appears with the first write.
func (e *RedisEnv) Open(ctx context.Context, name string, batch int, create bool) (*RedisLib, error) {
	l := &RedisLib{Name: name, Batch: batch}
	var f manyFilter
	switch name {
	case RedisGoZero:
		if batch != 0 {
			return nil, fmt.Errorf("%s has no batch calls", name)
		}
		gz := gzbloom.New(e.GoZero, redisGoZeroKey, uint(e.GoZeroBits))
		l.singles(gz.AddCtx, gz.ExistsCtx)
		return l, nil
	case RedisFilter:
		var err error
		if create {
			f, err = redisfilter.Create(ctx, e.Client, redisFilterKey, e.N, e.P)
		} else {
			f, err = redisfilter.Open(ctx, e.Client, redisFilterKey)
		}
		if err != nil {
			return nil, err
		}
	case RedisGoZeroFilter:
		var err error
		if f, err = redisfilter.OpenGoZero(e.Client, redisGoZeroKey, e.GoZeroBits); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown Redis filter %q", name)
	}
	if batch == 0 {
		l.singles(func(ctx context.Context, item []byte) error {
			_, err := f.Add(ctx, item)
			return err
		}, f.Exists)
		return l, nil
	}
	l.Add = func(ctx context.Context, items [][]byte) error {
		_, err := f.AddMany(ctx, items)
		return err
	}
	l.Exists = func(ctx context.Context, items [][]byte) (int, int, error) {
		found, err := f.ExistsMany(ctx, items)
		if err != nil {
			return 0, 0, err
		}
		pos, fn := 0, 0
		for i, ok := range found {
			pos, fn = pos+b2i(ok), fn+b2i(!ok && !bench.IsAbsent(items[i]))
		}
		return pos, fn, nil
	}
	return l, nil
}

// singles makes l call add and exists once per item.
func (l *RedisLib) singles(add func(context.Context, []byte) error, exists func(context.Context, []byte) (bool, error)) {
	l.Add = func(ctx context.Context, items [][]byte) error {
		for _, it := range items {
			if err := add(ctx, it); err != nil {
				return err
			}
		}
		return nil
	}
	l.Exists = func(ctx context.Context, items [][]byte) (int, int, error) {
		pos, fn := 0, 0
		for _, it := range items {
			ok, err := exists(ctx, it)
			if err != nil {
				return 0, 0, err
			}
			pos, fn = pos+b2i(ok), fn+b2i(!ok && !bench.IsAbsent(it))
		}
		return pos, fn, nil
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Drive calls op from goroutines goroutines on items of pool, unit items
// per call, the i-th item taken being pool[i % len(pool)], until limit
// items have been taken (when limit > 0) or d has passed (when d > 0),
// whichever comes first, or ctx ends. It returns the items done and the
// time until the last call returned; op's first error stops it.
func Drive(ctx context.Context, pool [][]byte, unit, goroutines, limit int, d time.Duration, op func(ctx context.Context, items [][]byte) error) (int, time.Duration, error) {
	if unit < 1 || goroutines < 1 || len(pool) == 0 || limit <= 0 && d <= 0 {
		return 0, 0, fmt.Errorf("Drive: bad arguments: unit %d, goroutines %d, pool %d, limit %d, duration %v", unit, goroutines, len(pool), limit, d)
	}
	var next, done atomic.Int64
	var stop atomic.Bool
	var once sync.Once
	var first error
	start := time.Now()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			var buf [][]byte // a call's items when they wrap around pool
			for !stop.Load() && ctx.Err() == nil && (d <= 0 || time.Since(start) < d) {
				from := int(next.Add(int64(unit))) - unit
				n := unit
				if limit > 0 {
					if from >= limit {
						return
					}
					n = min(n, limit-from)
				}
				items := wrapped(pool, from%len(pool), n, &buf)
				if err := op(ctx, items); err != nil {
					once.Do(func() { first = err })
					stop.Store(true)
					return
				}
				done.Add(int64(n))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first == nil {
		first = ctx.Err()
	}
	return int(done.Load()), elapsed, first
}

// wrapped returns n items of pool from index from on, going round to the
// start of pool if needed (then in *buf, reused).
func wrapped(pool [][]byte, from, n int, buf *[][]byte) [][]byte {
	if from+n <= len(pool) {
		return pool[from : from+n : from+n]
	}
	b := (*buf)[:0]
	for len(b) < n {
		take := min(n-len(b), len(pool)-from)
		b = append(b, pool[from:from+take]...)
		from = 0
	}
	*buf = b
	return b
}

// RedisSnapshot is every key of a Redis database, as DUMP serialises it.
type RedisSnapshot map[string]string

// Filled returns a snapshot of filter name's key(s) holding all of keys:
// it flushes the server, makes the filter and adds keys in batches of
// FillBatch from FillGoroutines goroutines. go-zero's filter is filled
// through GoZeroFilter, which writes the same bits (the interop module
// checks that).
func (e *RedisEnv) Filled(ctx context.Context, name string, keys [][]byte) (RedisSnapshot, error) {
	if err := e.Flush(ctx); err != nil {
		return nil, err
	}
	if name == RedisGoZero {
		name = RedisGoZeroFilter
	}
	l, err := e.Open(ctx, name, FillBatch, true)
	if err != nil {
		return nil, err
	}
	if _, _, err := Drive(ctx, keys, FillBatch, FillGoroutines, len(keys), 0, l.Add); err != nil {
		return nil, err
	}
	names, err := e.Client.Keys(ctx, "*").Result()
	if err != nil {
		return nil, err
	}
	s := RedisSnapshot{}
	for _, k := range names {
		if s[k], err = e.Client.Dump(ctx, k).Result(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Restore flushes the server and puts back the keys of s.
func (e *RedisEnv) Restore(ctx context.Context, s RedisSnapshot) error {
	if err := e.Flush(ctx); err != nil {
		return err
	}
	for k, v := range s {
		if err := e.Client.Restore(ctx, k, 0, v).Err(); err != nil {
			return fmt.Errorf("restore %s: %w", k, err)
		}
	}
	return nil
}
