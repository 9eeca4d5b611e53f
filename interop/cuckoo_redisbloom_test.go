package interop

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/bloomery/bloom/server"
	goredis "github.com/redis/go-redis/v9"
)

// A cuckoo filter of 10⁶ items moves between a real RedisBloom and
// bloomery serve with CF.SCANDUMP and CF.LOADCHUNK, both ways, and the
// two servers then answer CF.INFO, CF.MEXISTS and CF.COUNT with the same
// bytes on every item and on 10⁶ absent probes: with one sub-filter, and
// with 32. It runs here, outside the race detector, because it sends
// about 10⁷ commands. $BLOOMERY_REDISBLOOM names the module (a .so the
// installed redis-server can --loadmodule); without it the test skips.

// cfItems is how many items the filter of one sub-filter holds.
const cfItems = 1_000_000

// cfBatch is the items of one CF.MEXISTS.
const cfBatch = 1000

func TestCuckooDumpWithRedisBloom(t *testing.T) {
	module := os.Getenv("BLOOMERY_REDISBLOOM")
	if module == "" {
		t.Skip("BLOOMERY_REDISBLOOM is not set: set it to a RedisBloom module (.so) to move cuckoo filters between RedisBloom and bloomery serve")
	}
	addrs := []string{redistest.Start(t, "--loadmodule", module).Addr(), startBloomery(t, server.Config{})}
	var clients []*goredis.Client
	for _, a := range addrs {
		c := goredis.NewClient(&goredis.Options{Addr: a, Protocol: 2, ReadTimeout: time.Minute})
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	rb, ours := clients[0], clients[1]
	for _, tt := range []struct {
		name    string
		reserve []any // CF.RESERVE's arguments after the key
		items   int
		filters int64
	}{
		{"one sub-filter", []any{4 * cfItems}, cfItems, 1},
		// 2¹³ buckets of 4 a sub-filter: the 1 007 028th item makes the
		// 32nd, after which CF.ADD refuses (Maximum expansions reached).
		{"32 sub-filters", []any{32768, "BUCKETSIZE", 4, "MAXITERATIONS", 50}, 1_007_028, 32},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			for _, c := range clients {
				if err := c.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			// "rb" is filled in RedisBloom, "ours" here; then each is
			// copied to the other server under the same name.
			for i, key := range []string{"rb", "ours"} {
				if err := clients[i].Do(ctx, append([]any{"CF.RESERVE", key}, tt.reserve...)...).Err(); err != nil {
					t.Fatalf("CF.RESERVE %s: %v", key, err)
				}
			}
			fill(t, addrs, tt.items)
			moveCuckoo(t, rb, ours, "rb")
			moveCuckoo(t, ours, rb, "ours")
			for _, key := range []string{"rb", "ours"} {
				sameInfo(t, clients, key, tt.items, tt.filters)
				sameAnswers(t, addrs, key, tt.items)
			}
		})
	}
}

// fill adds the items "0" … n-1 with CF.ADD, pipelined: to "rb" on the
// first server, to "ours" on the second.
func fill(t *testing.T, addrs []string, n int) {
	t.Helper()
	keys := []string{"rb", "ours"}
	lockstep(t, addrs, n, func(s, i int, args []string) []string {
		return append(args, "CF.ADD", keys[s], strconv.Itoa(i))
	}, func(i int, replies []string) {
		for s, r := range replies {
			if r != ":1\r\n" {
				t.Fatalf("CF.ADD %s %d: %q", keys[s], i, r)
			}
		}
	})
}

// moveCuckoo copies key from src to dst with CF.SCANDUMP and
// CF.LOADCHUNK.
func moveCuckoo(t *testing.T, src, dst *goredis.Client, key string) {
	t.Helper()
	ctx := context.Background()
	for it := int64(0); ; {
		v, err := src.Do(ctx, "CF.SCANDUMP", key, it).Slice()
		if err != nil || len(v) != 2 {
			t.Fatalf("CF.SCANDUMP %s %d: %v %v", key, it, v, err)
		}
		if it = v[0].(int64); it == 0 {
			return
		}
		if err := dst.Do(ctx, "CF.LOADCHUNK", key, it, v[1]).Err(); err != nil {
			t.Fatalf("CF.LOADCHUNK %s %d: %v", key, it, err)
		}
	}
}

// sameInfo checks that both servers answer CF.INFO key alike, with
// n items in the given number of sub-filters.
func sameInfo(t *testing.T, clients []*goredis.Client, key string, n int, filters int64) {
	t.Helper()
	var infos []string
	for _, c := range clients {
		v, err := c.Do(context.Background(), "CF.INFO", key).Slice()
		if err != nil {
			t.Fatalf("CF.INFO %s: %v", key, err)
		}
		infos = append(infos, fmt.Sprint(v))
	}
	if infos[0] != infos[1] {
		t.Fatalf("CF.INFO %s: RedisBloom %s, bloomery %s", key, infos[0], infos[1])
	}
	want := fmt.Sprintf("Number of filters %d Number of items inserted %d ", filters, n)
	if !strings.Contains(infos[0], want) {
		t.Fatalf("CF.INFO %s: %s, want %q in it", key, infos[0], want)
	}
}

// sameAnswers sends both servers CF.MEXISTS of key in batches of
// cfBatch, then CF.COUNT of key, for the items "0" … 2n-1 (the first n
// added, the others absent), and checks that their replies are the same
// bytes, and that no added item answers 0.
func sameAnswers(t *testing.T, addrs []string, key string, n int) {
	t.Helper()
	batches := (2*n + cfBatch - 1) / cfBatch
	lockstep(t, addrs, batches+2*n, func(_, i int, args []string) []string {
		if i >= batches {
			return append(args, "CF.COUNT", key, strconv.Itoa(i-batches))
		}
		args = append(args, "CF.MEXISTS", key)
		for j := i * cfBatch; j < min((i+1)*cfBatch, 2*n); j++ {
			args = append(args, strconv.Itoa(j))
		}
		return args
	}, func(i int, r []string) {
		if r[0] != r[1] {
			t.Fatalf("%s: command %d: RedisBloom %q, bloomery %q", key, i, r[0], r[1])
		}
		switch {
		case i < batches && i*cfBatch < n && !addedFound(r[0], i*cfBatch, n):
			t.Fatalf("%s: CF.MEXISTS of items %d…: an added item answers 0: %q", key, i*cfBatch, r[0])
		case i >= batches && i-batches < n && r[0] == ":0\r\n":
			t.Fatalf("%s: CF.COUNT of added item %d: 0", key, i-batches)
		}
	})
}

// addedFound reports whether r, the CF.MEXISTS reply for the items from
// lo on, answers 1 for each one below n.
func addedFound(r string, lo, n int) bool {
	lines := strings.Split(r, "\r\n")[1:] // after "*count"
	for j := 0; j < len(lines)-1 && lo+j < n; j++ {
		if lines[j] != ":1" {
			return false
		}
	}
	return true
}
