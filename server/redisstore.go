package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// redisStore is the Redis backend: every filter is a redisfilter.Scalable
// in RedisBloom mode in a Redis or Redis Cluster, so the server keeps no
// state and any number of servers may share one Redis.
//
// The keyspace it shows is the filters: a key of another type (data of
// other applications in the same Redis, or the bitmaps of a filter's
// sub-filters) makes BF.RESERVE, BF.ADD, BF.INFO and BF.CARD answer
// WRONGTYPE, BF.EXISTS answer 0, and TYPE name its Redis type; every
// other command (EXISTS, DEL, the EXPIRE family, SCAN, KEYS, DBSIZE,
// FLUSHALL) sees only filters and leaves other keys alone.
//
// Commands are atomic one Redis call at a time: an add, a test, an
// expiry or a deletion is one script or read, but a command that first
// creates the filter (BF.ADD on a missing key) is two, and another server
// may act between them. Conditional expiry (EXPIRE … NX/XX/GT/LT),
// EXPIRETIME and PEXPIRETIME need Redis 7.0.
//
// Costs: a BF.ADD, BF.MADD or BF.EXISTS on a filter this server has used
// recently (an LRU of filterCacheSize opened filters) is one round trip
// to Redis; on another, one more to read its metadata. Concurrent adds
// (or tests) on one filter share their round trips: those that arrive
// while one is in flight go together in the next (redisstore_batch.go). SCAN, KEYS,
// DBSIZE and FLUSHALL walk the whole Redis (every master of a cluster)
// with SCAN, in time proportional to all its keys, filters or not.
//
// Expiry times are Redis's: EXPIRE's relative times are made absolute on
// this server's clock, and keys expire on Redis's.
//
// Limits: MaxFilterBytes bounds a filter (default
// DefaultMaxFilterBytes), and no sub-filter may pass a Redis string (512
// MiB), so a filter the memory backend could hold may answer "ERR
// Insufficient memory to create filter" here; MaxMemory does not apply
// (Redis's maxmemory does, and must not evict: see redisfilter).
type redisStore struct {
	client  redis.UniversalClient
	cluster *redis.ClusterClient // nil: one server, client is a *redis.Client
	addrs   string               // for INFO
	opts    []redisfilter.Option // WithMaxBytes
	cache   *filterCache
	lanes   *lanes               // coalescing (redisstore_batch.go)
	mirrors *redisfilter.Mirrors // nil: no copies

	keys atomic.Int64 // filters counted by the last DBSIZE or FLUSHALL

	pingMu sync.Mutex
	pinged time.Time
	up     bool
}

// filterCacheSize bounds the opened filters the backend keeps: a command
// on one of them is one round trip (the scripts check that the cached
// view is current), on another one more to open it.
const filterCacheSize = 4096

// pingTimeout bounds the check that Redis answers, at startup and for
// INFO.
const pingTimeout = 5 * time.Second

func newRedisStore(ctx context.Context, cfg Config) (*redisStore, error) {
	client, addrs, err := redisClient(cfg.Backend)
	if err != nil {
		return nil, fmt.Errorf("server: backend %s: %w", redactURL(cfg.Backend), err)
	}
	maxBytes := cfg.MaxFilterBytes
	if maxBytes == 0 {
		maxBytes = bloom.DefaultMaxBytes
	}
	r := &redisStore{client: client, addrs: strings.Join(addrs, ","),
		opts: []redisfilter.Option{redisfilter.WithMaxBytes(maxBytes)}, cache: newFilterCache(filterCacheSize),
		lanes: newLanes()}
	r.cluster, _ = client.(*redis.ClusterClient)
	if cfg.RedisMirrorBytes > 0 {
		r.mirrors = redisfilter.NewMirrors(cfg.RedisMirrorBytes)
		r.opts = append(r.opts, redisfilter.WithMirrors(r.mirrors))
	}
	r.lanes.depth = r.laneDepth
	if err := r.ping(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("server: backend %s: Redis does not answer: %w", redactURL(cfg.Backend), err)
	}
	return r, nil
}

// laneDepth is how many batches of a lane may be in flight at once: two
// of adds to a filter this server holds a copy of (each merged while the
// one before is on its way to Redis: redisfilter's mirrored writes), so
// that our work and Redis's overlap; one of other adds, whose watched
// writes would abort each other; one of tests (two measured 0.93x of one
// for BF.EXISTS at -P 16: docs/BENCHMARKS.md, "Copies of the bits in the
// stateless server").
func (r *redisStore) laneDepth(id laneID) int {
	if id.kind == laneAdd {
		if f := r.cache.get(id.key); f != nil && f.Mirrored() {
			return 2
		}
	}
	return 1
}

// backendProtocol is the RESP version the backend speaks to Redis unless
// the URL says (protocol=3): the backend needs no RESP3 reply, and
// go-redis looks for push notifications before each reply under RESP3
// (4% of the server's CPU time for BF.ADD at -P 16, docs/BENCHMARKS.md).
const backendProtocol = 2

// redisClient makes the client of a backend URL and lists its addresses:
// redis://, rediss:// (TLS) and unix:// as go-redis's ParseURL reads them
// (user, password, database and client options in the URL), or
// redis+cluster:// and rediss+cluster:// with a comma-separated list of
// seed nodes, as in redis+cluster://:password@h1:7000,h2:7000?dial_timeout=3s
// (the options of go-redis's ParseClusterURL; database 0 only); RESP2
// unless the URL says protocol=3.
func redisClient(raw string) (redis.UniversalClient, []string, error) {
	scheme, rest, _ := strings.Cut(raw, "://")
	if scheme != "redis+cluster" && scheme != "rediss+cluster" {
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, nil, err
		}
		if o.Protocol == 0 {
			o.Protocol = backendProtocol
		}
		return redis.NewClient(o), []string{o.Addr}, nil
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	path, query, _ := strings.Cut(tail, "?")
	if path != "" && path != "/" && path != "/0" {
		return nil, nil, fmt.Errorf("a Redis Cluster has only database 0, not %q", strings.TrimPrefix(path, "/"))
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, nil, err
	}
	seeds := strings.Split(hosts, ",")
	for _, h := range seeds[1:] {
		q.Add("addr", h)
	}
	o, err := redis.ParseClusterURL(strings.TrimSuffix(scheme, "+cluster") + "://" + userinfo + seeds[0] + "?" + q.Encode())
	if err != nil {
		return nil, nil, err
	}
	if o.Protocol == 0 {
		o.Protocol = backendProtocol
	}
	return redis.NewClusterClient(o), o.Addrs, nil
}

// redactURL hides the password of a backend URL, for messages.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	at := strings.LastIndexByte(rest, '@')
	if !ok || at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// ping checks that Redis answers: in a cluster, every master.
func (r *redisStore) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if r.cluster != nil {
		return r.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.Ping(ctx).Err()
		})
	}
	return r.client.Ping(ctx).Err()
}

// connected reports whether Redis answered a PING in the last second
// (asking again when the last answer is older).
func (r *redisStore) connected() bool {
	r.pingMu.Lock()
	defer r.pingMu.Unlock()
	if time.Since(r.pinged) > time.Second {
		r.up = r.ping(context.Background()) == nil
		r.pinged = time.Now()
	}
	return r.up
}

// Stats: Keys is the count of the last DBSIZE (or 0 after FLUSHALL) made
// through this server, since counting scans the whole Redis; expiries and
// filter bytes are not counted (0). Its fields (in INFO's persistence
// section: Redis keeps the data, and a reply is sent once Redis has
// acknowledged the change) name the Redis and whether it answers a PING
// (redis_connected 1 or 0).
func (r *redisStore) Stats() backendStats {
	mode := "standalone"
	if r.cluster != nil {
		mode = "cluster"
	}
	var ms redisfilter.MirrorStats
	if r.mirrors != nil {
		ms = r.mirrors.Stats()
	}
	return backendStats{Keys: r.keys.Load(), Fields: []infoField{
		{"backend_redis_addr", r.addrs},
		{"backend_redis_mode", mode},
		{"redis_connected", fmt.Sprint(b2i(r.connected()))},
		{"backend_mirror_bytes", fmt.Sprint(ms.Bytes)},
		{"backend_mirror_loads", fmt.Sprint(ms.Loads)},
		{"backend_mirror_conflicts", fmt.Sprint(ms.Conflicts)},
		{"backend_mirror_chained", fmt.Sprint(ms.Chained)},
	}}
}

func (r *redisStore) Close() error {
	if r.mirrors != nil {
		r.mirrors.Close()
	}
	err := r.client.Close()
	if errors.Is(err, redis.ErrClosed) {
		return nil
	}
	return err
}
