package server

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestRedisBackendServersWriteAtOnce: three bloomery servers in front of
// one Redis (and of a 3-master cluster), two clients on each, pipeline
// BF.ADD and BF.MADD of overlapping items into the same filters at once,
// so that redisfilter's watched writes abort each other and fall back to
// gated ones while the filters grow. Afterwards, through every server:
// no item is missing, each was new to exactly one client and counted
// once, the growth is RedisBloom's (every sub-filter but the last full),
// and the false-positive rate on items never added is within the target.
func TestRedisBackendServersWriteAtOnce(t *testing.T) {
	redisOnly(t)
	t.Run("server", func(t *testing.T) {
		checkServersWriteAtOnce(t, "redis://"+redistest.Start(t).Addr())
	})
	t.Run("cluster", func(t *testing.T) {
		checkServersWriteAtOnce(t, "redis+cluster://"+strings.Join(redistest.StartCluster(t).Addrs(), ","))
	})
}

func checkServersWriteAtOnce(t *testing.T, backend string) {
	ctx := context.Background()
	var servers []string
	for range 3 {
		_, addr := startServer(t, Config{Backend: backend})
		servers = append(servers, addr)
	}
	setup := newClient(t, servers[0], 2)
	const distinct, capacity = 8000, 1000
	want(t, setup, cmd("OK", "BF.RESERVE", "exact", "0.0000001", strconv.Itoa(capacity)),
		cmd("OK", "BF.RESERVE", "rate", "0.01", strconv.Itoa(capacity)))
	newTo := make([]int, distinct)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 2 * len(servers) {
		wg.Go(func() {
			c := newClient(t, servers[w%len(servers)], 2)
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for from := 0; from < distinct; {
				n := 1 + rng.IntN(600)
				picks := rng.Perm(min(n, distinct-from))
				p := c.Pipeline()
				var adds []*redis.Cmd
				var items []int
				for i := 0; i < len(picks); {
					k := 1 + rng.IntN(10) // BF.MADD of k, or BF.ADD
					args := []any{"BF.MADD", "exact"}
					for _, x := range picks[i:min(i+k, len(picks))] {
						items = append(items, from+x)
						args = append(args, "e"+strconv.Itoa(from+x))
					}
					if len(args) == 3 {
						args[0] = "BF.ADD"
					}
					adds = append(adds, p.Do(ctx, args...))
					p.Do(ctx, append([]any{"BF.MADD", "rate"}, args[2:]...)...)
					i += k
				}
				if _, err := p.Exec(ctx); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				i := 0
				for _, a := range adds {
					for _, isNew := range newAnswers(a) {
						newTo[items[i]] += isNew
						i++
					}
				}
				mu.Unlock()
				from += len(picks)
			}
		})
	}
	wg.Wait()
	for i, n := range newTo {
		if n != 1 {
			t.Fatalf("e%d was new to %d clients", i, n)
		}
	}
	// The servers' copies of the bits (on by default) were loaded and,
	// as the servers wrote the same filters at once, dropped on the
	// gate's refusal: the answers above held through both.
	loads, conflicts := 0, 0
	for _, addr := range servers {
		loads += backendInfo(t, newClient(t, addr, 2), "backend_mirror_loads")
		conflicts += backendInfo(t, newClient(t, addr, 2), "backend_mirror_conflicts")
	}
	if loads == 0 || conflicts == 0 {
		t.Errorf("copies loaded %d times, dropped for another server's write %d times: the test did not reach them", loads, conflicts)
	}
	members := itemArgs("e", 0, distinct)
	probes := itemArgs("never", 0, 30_000)
	for _, addr := range servers {
		c := newClient(t, addr, 2)
		for _, key := range []string{"exact", "rate"} {
			found := c.Do(ctx, append([]any{"BF.MEXISTS", key}, members...)...).Val().([]any)
			for i, f := range found {
				if f != int64(1) {
					t.Fatalf("%s via %s: e%d is missing", key, addr, i)
				}
			}
			checkRedisBloomGrowth(t, c, key, capacity, distinct)
		}
		if got := c.Do(ctx, "BF.CARD", "exact").Val(); got != int64(distinct) {
			t.Errorf("via %s: BF.CARD exact = %v, want %d", addr, got, distinct)
		}
		fp := 0
		for _, f := range c.Do(ctx, append([]any{"BF.MEXISTS", "rate"}, probes...)...).Val().([]any) {
			fp += int(f.(int64))
		}
		if ub := upper99(fp, len(probes)); ub > 0.01 {
			t.Errorf("via %s: rate %d/%d, 99%% upper bound %.4f > 0.01", addr, fp, len(probes), ub)
		}
	}
}

// newAnswers is a BF.ADD's or BF.MADD's reply as 1 (new) or 0 per item.
func newAnswers(c *redis.Cmd) []int {
	switch v := c.Val().(type) {
	case int64:
		return []int{int(v)}
	case []any:
		out := make([]int, len(v))
		for i, x := range v {
			out[i] = int(x.(int64))
		}
		return out
	}
	return nil
}

// checkRedisBloomGrowth checks key's sub-filters (BF.DEBUG) against
// RedisBloom's growth (expansion 2): capacities c, 2c, 4c, …, each but
// the last full, holding added items at most in all.
func checkRedisBloomGrowth(t *testing.T, c *redis.Client, key string, capacity, added int) {
	t.Helper()
	lines, err := c.Do(context.Background(), "BF.DEBUG", key).StringSlice()
	if err != nil || len(lines) < 2 {
		t.Fatalf("BF.DEBUG %s: %v, %v", key, lines, err)
	}
	total := 0
	for i, l := range lines[1:] {
		var bytes, bits, hashes, width, capa, size int
		var ratio float64
		if _, err := fmt.Sscanf(l, "bytes:%d bits:%d hashes:%d hashwidth:%d capacity:%d size:%d ratio:%g",
			&bytes, &bits, &hashes, &width, &capa, &size, &ratio); err != nil {
			t.Fatalf("BF.DEBUG %s: %q: %v", key, l, err)
		}
		last := i == len(lines)-2
		if capa != capacity<<i || !last && size != capa || last && (size < 1 || size > capa) {
			t.Errorf("%s: sub-filter %d of %d has capacity %d and holds %d", key, i, len(lines)-1, capa, size)
		}
		total += size
	}
	if total > added || lines[0] != "size:"+strconv.Itoa(total) {
		t.Errorf("%s: %s, the sub-filters hold %d (%d added)", key, lines[0], total, added)
	}
}

// upper99 is the upper bound of the 99% Wilson interval of x in n.
func upper99(x, n int) float64 {
	const z = 2.3263478740408408
	fn, ph := float64(n), float64(x)/float64(n)
	return (ph + z*z/(2*fn) + z*math.Sqrt(ph*(1-ph)/fn+z*z/(4*fn*fn))) / (1 + z*z/fn)
}

// backendInfo reads an integer field of the Redis backend from INFO.
func backendInfo(t *testing.T, c *redis.Client, field string) int {
	t.Helper()
	v, ok := redisInfo(t, c, "persistence")[field]
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		t.Fatalf("INFO %s: %q", field, v)
	}
	return n
}
