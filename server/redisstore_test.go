package server

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// Tests of the Redis backend against real redis-servers (internal/
// redistest), through the wire: go-redis is the client of our server,
// and a second go-redis client looks into the Redis behind it.

// startRedisBacked starts a bloomery server whose backend is backend (a
// Redis URL) and returns a RESP2 client of it.
func startRedisBacked(t *testing.T, backend string) *redis.Client {
	t.Helper()
	_, addr := startServer(t, Config{Backend: backend})
	return newClient(t, addr, 2)
}

// redisDirect is a client of the Redis itself.
func redisDirect(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// reply formats the reply to args, an error as "error: text", so that
// two servers' answers compare as strings.
func reply(c *redis.Client, args ...any) string {
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprint(v)
}

// want checks the replies to commands, each {want, args…}.
func want(t *testing.T, c *redis.Client, cmds ...[]any) {
	t.Helper()
	for _, cmd := range cmds {
		if got := reply(c, cmd[1:]...); got != cmd[0] {
			t.Errorf("%v: got %q, want %q", cmd[1:], got, cmd[0])
		}
	}
}

func cmd(want string, args ...any) []any { return append([]any{want}, args...) }

func itemArgs(prefix string, from, to int) []any {
	out := make([]any, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}

// sameAsMemory is a script of commands whose replies must be the same on
// both backends: RedisBloom's counters while a filter grows from 100 to
// 1500 items (the sub-filters have the same hash and bits, so even the
// false positives agree), a full non-scaling filter, creation options,
// errors, and the expiry commands.
func sameAsMemory() [][]any {
	cmds := [][]any{
		{"BF.RESERVE", "grow", "0.01", "100"},
		append([]any{"BF.MADD", "grow"}, itemArgs("i", 0, 100)...),
		{"BF.INFO", "grow"},
		{"BF.ADD", "grow", "i100"},
		{"BF.INFO", "grow"},
		append([]any{"BF.MADD", "grow"}, itemArgs("i", 101, 300)...),
		{"BF.ADD", "grow", "i300"},
		append([]any{"BF.MADD", "grow"}, itemArgs("i", 301, 700)...),
		{"BF.ADD", "grow", "i700"},
		{"BF.INFO", "grow"},
		append([]any{"BF.MADD", "grow"}, itemArgs("i", 701, 1500)...),
		{"BF.INFO", "grow"}, {"BF.CARD", "grow"},
		{"BF.INFO", "grow", "CAPACITY"}, {"BF.INFO", "grow", "ITEMS"}, {"BF.INFO", "grow", "FILTERS"},
		{"BF.INFO", "grow", "SIZE"}, {"BF.INFO", "grow", "EXPANSION"}, {"BF.INFO", "grow", "BOGUS"},
		append([]any{"BF.MEXISTS", "grow"}, itemArgs("i", 1400, 1600)...),
		{"BF.RESERVE", "grow", "0.01", "100"},
		{"BF.ADD", "auto", "x"}, {"BF.ADD", "auto", "x"}, {"BF.INFO", "auto"},
		{"BF.INSERT", "ins", "CAPACITY", "50", "ERROR", "0.001", "EXPANSION", "4", "ITEMS", "a", "b", "a"},
		{"BF.INFO", "ins"},
		{"BF.INSERT", "nope", "NOCREATE", "ITEMS", "a"},
		{"BF.RESERVE", "ns", "0.01", "10", "NONSCALING"},
		append([]any{"BF.MADD", "ns"}, itemArgs("n", 0, 15)...),
		{"BF.MADD", "ns", "n0", "n20", "n1"},
		{"BF.INSERT", "ns", "ITEMS", "n2", "n21"},
		{"BF.INFO", "ns"}, {"BF.INFO", "ns", "EXPANSION"},
		{"BF.EXISTS", "missing", "x"}, {"BF.MEXISTS", "missing", "x", "y"}, {"BF.CARD", "missing"},
		{"BF.INFO", "missing"},
		{"EXISTS", "grow", "ns", "missing", "grow"}, {"TYPE", "grow"}, {"TYPE", "missing"},
		{"EXPIRE", "grow", "100", "XX"}, {"EXPIRE", "grow", "100", "NX"}, {"EXPIRE", "grow", "200", "NX"},
		{"TTL", "grow"}, {"EXPIRE", "grow", "50", "GT"}, {"EXPIRE", "grow", "150", "GT"}, {"TTL", "grow"},
		{"EXPIRE", "grow", "300", "LT"}, {"EXPIRE", "grow", "10", "LT"}, {"TTL", "grow"},
		{"PERSIST", "grow"}, {"PERSIST", "grow"}, {"TTL", "grow"}, {"PTTL", "missing"}, {"TTL", "missing"},
		{"EXPIRE", "missing", "10"}, {"PERSIST", "missing"},
		{"PEXPIREAT", "grow", "4102444800123"}, {"PEXPIRETIME", "grow"}, {"EXPIRETIME", "grow"},
		{"EXPIRETIME", "missing"}, {"EXPIRETIME", "ns"},
		{"PEXPIRE", "auto", "-1"}, {"EXISTS", "auto"}, {"BF.EXISTS", "auto", "x"},
		{"DEL", "ns", "missing", "ns"}, {"BF.EXISTS", "ns", "n0"}, {"DBSIZE"}, {"KEYS", "*"},
		{"BF.ADD", "ns", "n0"}, {"BF.INFO", "ns"},
		{"FLUSHALL"}, {"DBSIZE"}, {"BF.CARD", "grow"},
	}
	return cmds
}

// TestRedisBackendSameAsMemory runs sameAsMemory on a memory server and on
// a Redis-backed one and compares every reply.
func TestRedisBackendSameAsMemory(t *testing.T) {
	rd := redistest.Start(t)
	checkSameAsMemory(t, startRedisBacked(t, "redis://"+rd.Addr()+"/0"))
}

// checkSameAsMemory runs sameAsMemory on red and on a new memory server.
func checkSameAsMemory(t *testing.T, red *redis.Client) {
	t.Helper()
	_, memAddr := startServer(t, Config{})
	mem := newClient(t, memAddr, 2)
	var grown string // the last full BF.INFO of the growing filter
	for _, c := range sameAsMemory() {
		m, r := reply(mem, c...), reply(red, c...)
		if c[0] == "KEYS" { // order is the store's
			m, r = sortedWords(m), sortedWords(r)
		}
		if m != r {
			t.Errorf("%.80v:\nmemory %.300s\nredis  %.300s", c, m, r)
		}
		if slices.Equal(c, []any{"BF.INFO", "grow"}) {
			grown = r
		}
	}
	// Not equal by accident: the filter did grow to 1500 in 4 sub-filters.
	if !strings.HasPrefix(grown, "[Capacity 1500 Size ") || !strings.Contains(grown, " Number of filters 4 Number of items inserted 14") {
		t.Errorf("BF.INFO after 1500 items: %s", grown)
	}
}

func sortedWords(s string) string {
	w := strings.Fields(strings.Trim(s, "[]"))
	slices.Sort(w)
	return strings.Join(w, " ")
}

// TestRedisBackendForeignKeys: keys that are not filters (set directly in
// Redis) answer WRONGTYPE to the BF commands but 0 to BF.EXISTS, are
// named by TYPE, and are invisible to and untouched by the keyspace
// commands (EXISTS, DEL, EXPIRE, SCAN, KEYS, DBSIZE, FLUSHALL).
func TestRedisBackendForeignKeys(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Start(t)
	direct := redisDirect(t, rd.Addr())
	c := startRedisBacked(t, "redis://"+rd.Addr())
	direct.Set(ctx, "plain", "text", 0)
	direct.HSet(ctx, "hash", "format", "not ours", "items", "7")
	const wrongType = "error: " + string(errWrongType)
	for _, k := range []string{"plain", "hash"} {
		want(t, c,
			cmd(wrongType, "BF.ADD", k, "x"), cmd(wrongType, "BF.MADD", k, "x", "y"),
			cmd(wrongType, "BF.INSERT", k, "ITEMS", "x"), cmd(wrongType, "BF.RESERVE", k, "0.01", "100"),
			cmd(wrongType, "BF.INFO", k), cmd(wrongType, "BF.CARD", k),
			cmd("0", "BF.EXISTS", k, "x"), cmd("[0 0]", "BF.MEXISTS", k, "x", "y"),
			cmd("0", "EXISTS", k), cmd("0", "DEL", k), cmd("0", "EXPIRE", k, "100"), cmd("-2", "TTL", k),
			cmd("-2", "PEXPIRETIME", k), cmd("0", "PERSIST", k))
	}
	want(t, c, cmd("string", "TYPE", "plain"), cmd("hash", "TYPE", "hash"), cmd("none", "TYPE", "missing"))
	want(t, c, cmd("OK", "BF.RESERVE", "f", "0.01", "100"), cmd("MBbloom--", "TYPE", "f"),
		cmd("[f]", "KEYS", "*"), cmd("1", "DBSIZE"), cmd("1", "EXISTS", "f", "plain", "hash"))
	// The filter's own sub-filter bitmap is a plain string to the server.
	sub := ""
	for _, k := range direct.Keys(ctx, "*").Val() {
		if strings.HasPrefix(k, "{f}") {
			sub = k
		}
	}
	want(t, c, cmd("string", "TYPE", sub), cmd(wrongType, "BF.ADD", sub, "x"), cmd("0", "DEL", sub))
	want(t, c, cmd("OK", "FLUSHALL"), cmd("0", "DBSIZE"), cmd("[]", "KEYS", "*"))
	if keys := direct.Keys(ctx, "*").Val(); !slices.Equal(sortedKeys(keys), []string{"hash", "plain"}) {
		t.Errorf("keys left in Redis after FLUSHALL: %v, want hash and plain", keys)
	}
	if v := direct.Get(ctx, "plain").Val(); v != "text" {
		t.Errorf("plain = %q", v)
	}
}

func sortedKeys(keys []string) []string {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	return keys
}

// TestRedisBackendKeys: DEL, EXPIRE and PERSIST act on every Redis key of
// a filter; SCAN's cursor walks all filters once; RENAME, SCANDUMP,
// LOADCHUNK, SAVE and BGSAVE answer errors; INFO names the Redis.
func TestRedisBackendKeys(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Start(t)
	direct := redisDirect(t, rd.Addr())
	c := startRedisBacked(t, "redis://"+rd.Addr()+"/0")
	want(t, c, cmd("OK", "BF.RESERVE", "f", "0.01", "10"))
	if got := reply(c, append([]any{"BF.MADD", "f"}, itemArgs("x", 0, 100)...)...); strings.Count(got, "1") < 90 {
		t.Fatalf("BF.MADD: %s", got)
	}
	redisKeys := direct.Keys(ctx, "*").Val()
	if len(redisKeys) != 5 { // metadata and sub-filters of 10, 20, 40, 80
		t.Fatalf("Redis keys of the filter: %v", redisKeys)
	}
	ttls := func() (out []int64) {
		for _, k := range redisKeys {
			out = append(out, direct.Do(ctx, "PEXPIRETIME", k).Val().(int64))
		}
		return out
	}
	want(t, c, cmd("1", "PEXPIREAT", "f", "4102444800123"), cmd("4102444800123", "PEXPIRETIME", "f"))
	if at := ttls(); slices.Max(at) != 4102444800123 || slices.Min(at) != 4102444800123 {
		t.Errorf("expiry times of the filter's keys: %v", at)
	}
	want(t, c, cmd("1", "PERSIST", "f"), cmd("-1", "PTTL", "f"))
	if at := ttls(); slices.Max(at) != -1 || slices.Min(at) != -1 {
		t.Errorf("expiry times of the filter's keys after PERSIST: %v", at)
	}
	want(t, c, cmd("1", "DEL", "f"), cmd("0", "BF.EXISTS", "f", "x1"))
	if n := direct.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d Redis keys left after DEL", n)
	}
	want(t, c, cmd("1", "BF.ADD", "g", "x"), cmd("1", "PEXPIRE", "g", "0"), cmd("0", "EXISTS", "g"))
	if n := direct.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d Redis keys left after PEXPIRE 0", n)
	}
	want(t, c, cmd("1", "BF.ADD", "g", "x"),
		cmd("error: "+string(errRenameUnsupported), "RENAME", "g", "h"),
		cmd("error: "+string(errNotSupported), "BF.SCANDUMP", "g", "0"),
		cmd("error: "+string(errNotSupported), "BF.LOADCHUNK", "g", "1", "data"),
		cmd("error: "+string(errNotSupported), "SAVE"), cmd("error: "+string(errNotSupported), "BGSAVE"),
		cmd("error: "+string(errNotFound), "BF.SCANDUMP", "missing", "0"))
	info := c.Info(ctx, "persistence", "keyspace").Val()
	for _, line := range []string{"backend_redis_addr:" + rd.Addr(), "backend_redis_mode:standalone", "redis_connected:1"} {
		if !strings.Contains(info, line+"\r\n") {
			t.Errorf("INFO has no %q:\n%s", line, info)
		}
	}
	checkScan(t, c, 250)
	if info := c.Info(ctx, "keyspace").Val(); !strings.Contains(info, "db0:keys=251,") {
		t.Errorf("INFO keyspace after DBSIZE:\n%s", info)
	}
}

// checkScan makes n more filters and checks that SCAN (with COUNT and
// MATCH), KEYS and DBSIZE see each filter once.
func checkScan(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	before := c.DBSize(ctx).Val()
	var made []string
	for i := range n {
		k := "scan:" + strconv.Itoa(i)
		made = append(made, k)
		want(t, c, cmd("1", "BF.ADD", k, "x"))
	}
	slices.Sort(made)
	var seen []string
	calls := 0
	for cursor := uint64(0); ; calls++ {
		keys, next, err := c.Scan(ctx, cursor, "scan:*", 20).Result()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, keys...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	if slices.Sort(seen); !slices.Equal(seen, made) {
		t.Errorf("SCAN MATCH scan:* saw %d keys, want %d", len(seen), len(made))
	}
	if calls < 2 {
		t.Errorf("SCAN COUNT 20 over %d keys in %d calls", n, calls)
	}
	if keys := c.Keys(ctx, "scan:*").Val(); !slices.Equal(sortedKeys(keys), made) {
		t.Errorf("KEYS scan:* gave %d keys, want %d", len(keys), len(made))
	}
	if got := c.DBSize(ctx).Val(); got != before+int64(n) {
		t.Errorf("DBSIZE %d, want %d", got, before+int64(n))
	}
}

// TestRedisBackendSharedRedis: two servers on one Redis see each other's
// filters, growth, expiries, deletions and recreations, also for filters
// each has cached.
func TestRedisBackendSharedRedis(t *testing.T) {
	rd := redistest.Start(t)
	a := startRedisBacked(t, "redis://"+rd.Addr())
	b := startRedisBacked(t, "redis://"+rd.Addr())
	want(t, a, cmd("OK", "BF.RESERVE", "s", "0.001", "100"), cmd("1", "BF.ADD", "s", "x"))
	want(t, b, cmd("1", "BF.EXISTS", "s", "x"), cmd("0", "BF.ADD", "s", "x"), cmd("1", "BF.ADD", "s", "y"))
	// Both have s cached now; b grows it, a follows.
	reply(b, append([]any{"BF.MADD", "s"}, itemArgs("b", 0, 500)...)...)
	info := reply(b, "BF.INFO", "s")
	want(t, a, cmd(info, "BF.INFO", "s"), cmd("[1 1 1]", "BF.MEXISTS", "s", "b0", "b250", "b499"))
	want(t, a, cmd("error: "+string(errItemExists), "BF.RESERVE", "s", "0.01", "10"))
	// b deletes it: a's cached filter must not answer.
	want(t, b, cmd("1", "DEL", "s"))
	want(t, a, cmd("0", "BF.EXISTS", "s", "x"), cmd("error: "+string(errNotFound), "BF.INFO", "s"),
		cmd("0", "BF.CARD", "s"), cmd("0", "EXISTS", "s"), cmd("0", "EXPIRE", "s", "100"),
		cmd("error: "+string(errNotFound), "BF.INSERT", "s", "NOCREATE", "ITEMS", "x"))
	// b makes it again, non-scaling and small: a sees the new one.
	want(t, b, cmd("OK", "BF.RESERVE", "s", "0.01", "2", "NONSCALING"), cmd("1", "BF.ADD", "s", "x"))
	want(t, a, cmd("1", "BF.EXISTS", "s", "x"), cmd("0", "BF.EXISTS", "s", "b0"),
		cmd("[Capacity 2 Size 8 Number of filters 1 Number of items inserted 1 Expansion rate <nil>]", "BF.INFO", "s"),
		cmd("[1 ERR non scaling filter is full]", "BF.MADD", "s", "y", "z"))
	// a deletes it, then adds: a new filter with the defaults, seen by b.
	want(t, a, cmd("1", "DEL", "s"))
	want(t, b, cmd("0", "BF.EXISTS", "s", "x"))
	want(t, a, cmd("1", "BF.ADD", "s", "q"))
	want(t, b, cmd("[Capacity 100 Size 152 Number of filters 1 Number of items inserted 1 Expansion rate 2]", "BF.INFO", "s"),
		cmd("0", "BF.EXISTS", "s", "x"), cmd("1", "EXPIRE", "s", "100"))
	want(t, a, cmd("100", "TTL", "s"), cmd("1", "PERSIST", "s"))
	want(t, b, cmd("-1", "TTL", "s"))
	// Replaced by a string by b's hand: a's cached filter must not answer.
	want(t, b, cmd("1", "DEL", "s"))
	redisDirect(t, rd.Addr()).Set(context.Background(), "s", "plain", 0)
	want(t, a, cmd("0", "BF.EXISTS", "s", "q"), cmd("error: "+string(errWrongType), "BF.ADD", "s", "q"),
		cmd("string", "TYPE", "s"))
}

// TestRedisBackendCluster: on a 3-master Redis Cluster the same replies as
// the memory backend; filters spread over all masters, and SCAN, KEYS,
// DBSIZE, DEL and FLUSHALL reach every one.
func TestRedisBackendCluster(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t)
	c := startRedisBacked(t, "redis+cluster://"+strings.Join(cl.Addrs(), ","))
	checkSameAsMemory(t, c)
	checkScan(t, c, 300)
	for _, n := range cl.Nodes() {
		if keys := redisDirect(t, n.Addr()).DBSize(ctx).Val(); keys < 150 { // 300 filters of 2 keys, a third each
			t.Errorf("master %s holds %d keys", n.Addr(), keys)
		}
	}
	direct := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { direct.Close() })
	direct.Set(ctx, "foreign", "x", 0)
	want(t, c, cmd("3", "DEL", "scan:0", "scan:1", "scan:2", "foreign"), cmd("297", "DBSIZE"),
		cmd("1", "EXPIRE", "scan:3", "100"), cmd("100", "TTL", "scan:3"),
		cmd("OK", "FLUSHALL"), cmd("0", "DBSIZE"))
	if n := direct.DBSize(ctx).Val(); n != 1 { // a cluster client's DBSIZE sums the masters'
		t.Errorf("%d keys left in the cluster after FLUSHALL, want the foreign one", n)
	}
	if !strings.Contains(c.Info(ctx, "persistence").Val(), "backend_redis_mode:cluster\r\n") {
		t.Error("INFO persistence does not say cluster")
	}
}

// TestRedisBackendURL: the URL forms, with password, database, TLS and
// client options (RESP2 unless the URL says); errors name the URL
// without its password.
func TestRedisBackendURL(t *testing.T) {
	for _, tc := range []struct {
		url   string
		addrs []string
		check func(redis.UniversalClient) string
	}{
		{"redis://:secret@h:7000/3?dial_timeout=2s", []string{"h:7000"}, func(c redis.UniversalClient) string {
			o := c.(*redis.Client).Options()
			return fmt.Sprint(o.Password, o.DB, o.DialTimeout, o.TLSConfig == nil, o.Protocol == backendProtocol)
		}},
		{"redis://h?protocol=3", []string{"h:6379"}, func(c redis.UniversalClient) string {
			return fmt.Sprint(c.(*redis.Client).Options().Protocol == 3)
		}},
		{"rediss://user:pw@h", []string{"h:6379"}, func(c redis.UniversalClient) string {
			o := c.(*redis.Client).Options()
			return fmt.Sprint(o.Username, o.Password, o.TLSConfig != nil)
		}},
		{"unix:///tmp/redis.sock?db=2", []string{"/tmp/redis.sock"}, func(c redis.UniversalClient) string {
			return fmt.Sprint(c.(*redis.Client).Options().DB)
		}},
		{"redis+cluster://:pw@a:1,b:2,c:3/0?read_timeout=4s", []string{"a:1", "b:2", "c:3"}, func(c redis.UniversalClient) string {
			o := c.(*redis.ClusterClient).Options()
			return fmt.Sprint(o.Password, o.ReadTimeout, o.TLSConfig == nil, o.Protocol == backendProtocol)
		}},
		{"redis+cluster://a:1?protocol=3", []string{"a:1"}, func(c redis.UniversalClient) string {
			return fmt.Sprint(c.(*redis.ClusterClient).Options().Protocol == 3)
		}},
		{"rediss+cluster://a:1", []string{"a:1"}, func(c redis.UniversalClient) string {
			return fmt.Sprint(c.(*redis.ClusterClient).Options().TLSConfig != nil)
		}},
	} {
		c, addrs, err := redisClient(tc.url)
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		got := tc.check(c)
		c.Close()
		if !slices.Equal(addrs, tc.addrs) || strings.Contains(got, "false") {
			t.Errorf("%s: addrs %v, options %s", tc.url, addrs, got)
		}
	}
	for _, bad := range []string{"redis+cluster://a:1,b:2/1", "redis+cluster://a:1?bogus=1", "redis://h:1/notadb"} {
		if c, _, err := redisClient(bad); err == nil {
			c.Close()
			t.Errorf("%s: no error", bad)
		}
	}
	if got := redactURL("redis+cluster://u:secret@a:1,b:2"); got != "redis+cluster://u:xxxxx@a:1,b:2" {
		t.Errorf("redactURL: %s", got)
	}
}

// TestRedisBackendUnreachable: New fails, naming the URL without its
// password; a wrong password fails too.
func TestRedisBackendUnreachable(t *testing.T) {
	redisOnly(t)
	rd := redistest.Start(t)
	addr := rd.Addr()
	rd.Stop()
	_, err := New(Config{Addr: "127.0.0.1:0", Backend: "redis://:right@" + addr})
	if err == nil || !strings.Contains(err.Error(), "Redis does not answer") || strings.Contains(err.Error(), "right") {
		t.Errorf("New with Redis stopped: %v", err)
	}
	rd.Restart(t)
	redisDirect(t, addr).ConfigSet(context.Background(), "requirepass", "right")
	_, err = New(Config{Addr: "127.0.0.1:0", Backend: "redis://:wrong@" + addr})
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "wrong@") {
		t.Errorf("New with a wrong password: %v", err)
	}
	c := startRedisBacked(t, "redis://:right@"+addr)
	want(t, c, cmd("1", "BF.ADD", "k", "x"))
}

// TestRedisBackendOutage: while Redis is down, commands answer "ERR …"
// and INFO says redis_connected:0; after it comes back, they work again.
func TestRedisBackendOutage(t *testing.T) {
	redisOnly(t)
	ctx := context.Background()
	rd := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	c := startRedisBacked(t, "redis://"+rd.Addr()+"?max_retries=-1") // fail at once
	want(t, c, cmd("1", "BF.ADD", "k", "x"))
	rd.Kill()
	for _, args := range [][]any{{"BF.ADD", "k", "y"}, {"BF.EXISTS", "k", "x"}, {"BF.INFO", "k"}, {"DBSIZE"}, {"TTL", "k"}} {
		if got := reply(c, args...); !strings.HasPrefix(got, "error: ERR ") {
			t.Errorf("%v with Redis down: %s", args, got)
		}
	}
	time.Sleep(1100 * time.Millisecond) // past the cached PING answer
	if info := c.Info(ctx, "persistence").Val(); !strings.Contains(info, "redis_connected:0\r\n") {
		t.Errorf("INFO with Redis down:\n%s", info)
	}
	rd.Restart(t)
	// After many failed dials go-redis answers the last dial error until
	// a background dial (one a second) succeeds: commands may fail for a
	// moment.
	got := ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = reply(c, "BF.ADD", "k", "y"); !strings.HasPrefix(got, "error: ") {
			break
		}
	}
	if got != "1" {
		t.Fatalf("BF.ADD after Redis came back: %s", got)
	}
	want(t, c, cmd("1", "BF.EXISTS", "k", "x"), cmd("[1 1]", "BF.MEXISTS", "k", "x", "y"))
	time.Sleep(1100 * time.Millisecond)
	if info := c.Info(ctx, "persistence").Val(); !strings.Contains(info, "redis_connected:1\r\n") {
		t.Errorf("INFO with Redis back:\n%s", info)
	}
}

// TestRedisBackendRoundTrips: in the steady state a BF.ADD is one round
// trip to Redis (a script call) and a BF.EXISTS one (a pipelined read),
// with no metadata reads; a server that has not cached a filter opens it
// once.
func TestRedisBackendRoundTrips(t *testing.T) {
	rd := redistest.Start(t)
	srv, addr := startServer(t, Config{Backend: "redis://" + rd.Addr()})
	trips := countTrips(srv)
	c := newClient(t, addr, 2)
	want(t, c, cmd("OK", "BF.RESERVE", "k", "0.0001", "1000"), cmd("1", "BF.ADD", "k", "x"),
		cmd("1", "BF.EXISTS", "k", "x")) // dials the connections
	trips.reset()
	for i := range 100 {
		want(t, c, cmd("1", "BF.ADD", "k", "y"+strconv.Itoa(i)), cmd("1", "BF.EXISTS", "k", "x"))
	}
	if got := trips.reset(); len(got) != 2 || got["evalsha"] != 100 || got["pipeline"] != 100 {
		t.Errorf("round trips for 100 BF.ADD and 100 BF.EXISTS: %v", got)
	}
	srv2, addr2 := startServer(t, Config{Backend: "redis://" + rd.Addr()})
	trips2 := countTrips(srv2)
	c2 := newClient(t, addr2, 2)
	for range 10 {
		want(t, c2, cmd("0", "BF.ADD", "k", "x"))
	}
	if got := trips2.reset(); len(got) != 2 || got["hgetall"] != 1 || got["evalsha"] != 10 {
		t.Errorf("round trips for 10 BF.ADD on a new server: %v", got)
	}
}

// TestRedisBackendMirrors: a filter written in batches gets a copy of
// its bits (on by default): its next batch of adds is one round trip; a
// deleted filter gives the copy's bytes back; RedisMirrorBytes < 0 makes
// none.
func TestRedisBackendMirrors(t *testing.T) {
	rd := redistest.Start(t)
	madd := func(prefix string) []any {
		return append([]any{"BF.MADD", "k"}, itemArgs(prefix, 0, 100)...)
	}
	for _, tc := range []struct {
		name   string
		mirror int64
		loads  int
	}{{"default", 0, 1}, {"off", -1, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, addr := startServer(t, Config{Backend: "redis://" + rd.Addr(), RedisMirrorBytes: tc.mirror})
			c := newClient(t, addr, 2)
			want(t, c, cmd("OK", "BF.RESERVE", "k", "0.001", "100000"))
			if err := c.Do(context.Background(), madd("a")...).Err(); err != nil {
				t.Fatal(err)
			}
			if got := backendInfo(t, c, "backend_mirror_loads"); got != tc.loads {
				t.Fatalf("copies loaded: %d, want %d", got, tc.loads)
			}
			trips := countTrips(srv)
			direct := newClient(t, rd.Addr(), 2)
			before := commandCalls(t, direct)
			if err := c.Do(context.Background(), madd("b")...).Err(); err != nil {
				t.Fatal(err)
			}
			after := commandCalls(t, direct)
			// With a copy: one transaction, on the mirrored writes' own
			// connection (not go-redis's), and no reads.
			if got := trips.reset(); tc.loads == 1 && (len(got) != 0 || after["exec"]-before["exec"] != 1 || after["getrange"] != before["getrange"]) {
				t.Errorf("a BF.MADD of 100 with a copy: go-redis round trips %v, EXEC %d, GETRANGE %d; want none, 1, 0",
					got, after["exec"]-before["exec"], after["getrange"]-before["getrange"])
			}
			if backendInfo(t, c, "backend_mirror_bytes") == 0 && tc.loads == 1 {
				t.Fatal("no bytes held by the copy")
			}
			want(t, c, cmd("1", "DEL", "k"))
			for end := time.Now().Add(5 * time.Second); backendInfo(t, c, "backend_mirror_bytes") != 0; {
				if time.Now().After(end) {
					t.Fatal("the deleted filter's copy still holds its bytes")
				}
				time.Sleep(10 * time.Millisecond)
			}
			c.Do(context.Background(), "FLUSHALL")
		})
	}
}

// tripCounter counts the round trips of a Redis backend's client, by
// command name ("pipeline" for a pipeline).
type tripCounter struct {
	mu    sync.Mutex
	trips map[string]int
}

func countTrips(srv *Server) *tripCounter {
	h := &tripCounter{trips: map[string]int{}}
	srv.backend.(*redisStore).client.AddHook(h)
	return h
}

func (h *tripCounter) add(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trips[name]++
}

// reset returns the counts so far and starts again.
func (h *tripCounter) reset() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.trips
	h.trips = map[string]int{}
	return out
}

func (h *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd.Name())
		return next(ctx, cmd)
	}
}

func (h *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.add("pipeline")
		return next(ctx, cmds)
	}
}

// TestFilterCache: bounded, least recently used out first; drop only
// forgets the filter it names.
func TestFilterCache(t *testing.T) {
	c := newFilterCache(3)
	fs := make([]*redisfilter.Scalable, 5)
	for i := range fs {
		fs[i] = new(redisfilter.Scalable)
	}
	c.put("a", fs[0])
	c.put("b", fs[1])
	c.put("c", fs[2])
	c.get("a")
	c.put("d", fs[3]) // evicts b, the least recently used
	if c.get("b") != nil || c.get("a") != fs[0] || c.get("d") != fs[3] || c.len() != 3 {
		t.Errorf("after eviction: b %p, a %p, d %p, len %d", c.get("b"), c.get("a"), c.get("d"), c.len())
	}
	c.drop("a", fs[4]) // another filter: kept
	if c.get("a") != fs[0] {
		t.Error("drop of another filter forgot a")
	}
	c.drop("a", fs[0])
	c.drop("c", nil)
	if c.get("a") != nil || c.get("c") != nil || c.len() != 1 {
		t.Errorf("after drops: len %d", c.len())
	}
	c.put("d", fs[4])
	if c.get("d") != fs[4] || c.len() != 1 {
		t.Error("put over d")
	}
	c.clear()
	if c.len() != 0 || c.get("d") != nil {
		t.Error("clear")
	}
}

// redisSkips picks the behaviour table's rows the Redis backend does not
// support: BF.SCANDUMP and BF.LOADCHUNK of a filter, and RENAME; and,
// until it has cuckoo filters (issue 14), the CF.* rows.
func redisSkips(row string) bool {
	return strings.HasPrefix(row, "bf.scandump/") || strings.HasPrefix(row, "bf.loadchunk/") || row == "keys/rename" ||
		strings.HasPrefix(row, "cf.")
}

// TestBehaviourRedis and TestBehaviourRedisCluster run the behaviour table
// on the Redis backend, on one redis-server and on a 3-master cluster.
func TestBehaviourRedis(t *testing.T) {
	redisOnly(t)
	rd := redistest.Start(t)
	cfg := behaviourConfig()
	cfg.Backend = "redis://" + rd.Addr()
	_, addr := startServer(t, cfg)
	runBehaviourTable(t, clientFactory(addr, 2), redisSkips)
}

func TestBehaviourRedisCluster(t *testing.T) {
	redisOnly(t)
	cl := redistest.StartCluster(t)
	cfg := behaviourConfig()
	cfg.Backend = "redis+cluster://" + strings.Join(cl.Addrs(), ",")
	_, addr := startServer(t, cfg)
	runBehaviourTable(t, clientFactory(addr, 3), redisSkips)
}

// commandCalls reads INFO commandstats: calls per command, lower case.
func commandCalls(t *testing.T, c *redis.Client) map[string]int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return redistest.CommandCalls(info)
}
