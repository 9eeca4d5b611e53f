package server

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// go-redis's typed Bloom filter API against the server, in RESP2 and
// RESP3; pipelines; many concurrent clients.

func TestClientTypedBF(t *testing.T) {
	_, addr := startServer(t, Config{})
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			c := newClient(t, addr, proto)
			ctx := context.Background()
			key := func(s string) string { return strconv.Itoa(proto) + ":" + s }
			ok := func(what string, cmd *redis.StatusCmd) {
				t.Helper()
				if v, err := cmd.Result(); err != nil || v != "OK" {
					t.Errorf("%s: %q, %v; want OK", what, v, err)
				}
			}
			ok("BFReserve", c.BFReserve(ctx, key("r"), 0.01, 1000))
			ok("BFReserveExpansion", c.BFReserveExpansion(ctx, key("x"), 0.01, 100, 4))
			ok("BFReserveNonScaling", c.BFReserveNonScaling(ctx, key("ns"), 0.01, 2))
			ok("BFReserveWithArgs", c.BFReserveWithArgs(ctx, key("w"), &redis.BFReserveOptions{Capacity: 500, Error: 0.001, Expansion: 3}))
			ok("BFReserveWithArgs nonscaling", c.BFReserveWithArgs(ctx, key("wns"), &redis.BFReserveOptions{Capacity: 10, Error: 0.1, NonScaling: true}))
			if err := c.BFReserve(ctx, key("r"), 0.01, 1000).Err(); err == nil || err.Error() != "ERR item exists" {
				t.Errorf("BFReserve of an existing key: %v, want ERR item exists", err)
			}
			if err := c.BFReserve(ctx, key("bad"), 2, 100).Err(); err == nil || err.Error() != errRateRange {
				t.Errorf("BFReserve at rate 2: %v, want %q", err, errRateRange)
			}

			if added, err := c.BFAdd(ctx, key("r"), "a").Result(); err != nil || !added {
				t.Errorf("BFAdd new: %v, %v", added, err)
			}
			if added, err := c.BFAdd(ctx, key("r"), "a").Result(); err != nil || added {
				t.Errorf("BFAdd again: %v, %v", added, err)
			}
			if found, err := c.BFExists(ctx, key("r"), "a").Result(); err != nil || !found {
				t.Errorf("BFExists added: %v, %v", found, err)
			}
			if found, err := c.BFExists(ctx, key("missing"), "a").Result(); err != nil || found {
				t.Errorf("BFExists on a missing key: %v, %v", found, err)
			}
			bools := func(what string, cmd *redis.BoolSliceCmd, want ...bool) {
				t.Helper()
				if got, err := cmd.Result(); err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("%s: %v, %v; want %v", what, got, err, want)
				}
			}
			bools("BFMAdd", c.BFMAdd(ctx, key("r"), "b", "c", "a"), true, true, false)
			bools("BFMExists", c.BFMExists(ctx, key("r"), "a", "b", "zzz"), true, true, false)
			bools("BFMExists missing", c.BFMExists(ctx, key("missing"), "a", "b"), false, false)
			bools("BFInsert", c.BFInsert(ctx, key("i"), &redis.BFInsertOptions{Capacity: 2000, Error: 0.001, Expansion: 4}, "a", "b", "a"), true, true, false)
			bools("BFInsert NoCreate existing", c.BFInsert(ctx, key("i"), &redis.BFInsertOptions{NoCreate: true}, "c"), true)
			bools("BFInsert NonScaling", c.BFInsert(ctx, key("ins"), &redis.BFInsertOptions{Capacity: 5, NonScaling: true}, "a"), true)
			if err := c.BFInsert(ctx, key("nope"), &redis.BFInsertOptions{NoCreate: true}, "a").Err(); err == nil || err.Error() != "ERR not found" {
				t.Errorf("BFInsert NoCreate on a missing key: %v, want ERR not found", err)
			}
			if err := c.BFMAdd(ctx, key("ns"), "a", "b", "c").Err(); err == nil || err.Error() != errFullText {
				t.Errorf("BFMAdd past a full non-scaling filter: %v, want %q", err, errFullText)
			}

			info, err := c.BFInfo(ctx, key("i")).Result()
			if err != nil || info.Capacity != 2000 || info.Filters != 1 || info.ItemsInserted != 3 || info.ExpansionRate != 4 || info.Size <= 0 {
				t.Errorf("BFInfo: %+v, %v; want capacity 2000, 1 filter, 3 items, expansion 4", info, err)
			}
			for _, f := range []struct {
				name string
				cmd  *redis.BFInfoCmd
				want redis.BFInfo
			}{
				{"BFInfoCapacity", c.BFInfoCapacity(ctx, key("i")), redis.BFInfo{Capacity: 2000}},
				{"BFInfoSize", c.BFInfoSize(ctx, key("i")), redis.BFInfo{Size: info.Size}},
				{"BFInfoFilters", c.BFInfoFilters(ctx, key("i")), redis.BFInfo{Filters: 1}},
				{"BFInfoItems", c.BFInfoItems(ctx, key("i")), redis.BFInfo{ItemsInserted: 3}},
				{"BFInfoExpansion", c.BFInfoExpansion(ctx, key("x")), redis.BFInfo{ExpansionRate: 4}},
				{"BFInfoArg items", c.BFInfoArg(ctx, key("r"), "ITEMS"), redis.BFInfo{ItemsInserted: 3}},
				{"BFInfoArg capacity", c.BFInfoArg(ctx, key("w"), "CAPACITY"), redis.BFInfo{Capacity: 500}},
			} {
				if got, err := f.cmd.Result(); err != nil || got != f.want {
					t.Errorf("%s: %+v, %v; want %+v", f.name, got, err, f.want)
				}
			}
			if err := c.BFInfo(ctx, key("missing")).Err(); err == nil || err.Error() != "ERR not found" {
				t.Errorf("BFInfo on a missing key: %v, want ERR not found", err)
			}
			if n, err := c.BFCard(ctx, key("r")).Result(); err != nil || n != 3 {
				t.Errorf("BFCard: %d, %v; want 3", n, err)
			}
			if n, err := c.BFCard(ctx, key("missing")).Result(); err != nil || n != 0 {
				t.Errorf("BFCard on a missing key: %d, %v; want 0", n, err)
			}

			// BFScanDump and BFLoadChunk copy a grown filter.
			src := key("grown")
			for i := range 10 {
				if err := c.BFMAdd(ctx, src, items("item"+strconv.Itoa(i)+"-", 100)...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			copied := key("copy")
			for it, n := int64(0), 0; ; n++ {
				d, err := c.BFScanDump(ctx, src, it).Result()
				if err != nil || n > 100 {
					t.Fatalf("BFScanDump %d: %v after %d chunks", it, err, n)
				}
				if d.Iter == 0 {
					break
				}
				if err := c.BFLoadChunk(ctx, copied, d.Iter, d.Data).Err(); err != nil {
					t.Fatalf("BFLoadChunk %d: %v", d.Iter, err)
				}
				it = d.Iter
			}
			a, errA := c.BFInfo(ctx, src).Result()
			b, errB := c.BFInfo(ctx, copied).Result()
			if errA != nil || errB != nil || a != b || a.Filters < 3 {
				t.Errorf("BFInfo of the source %+v (%v) and of its copy %+v (%v); want equal, grown", a, errA, b, errB)
			}
			all := items("item3-", 100)
			if got, err := c.BFMExists(ctx, copied, all...).Result(); err != nil || strings.Contains(fmt.Sprint(got), "false") {
				t.Errorf("BFMExists on the copy: %v, %v; want every item", got, err)
			}
		})
	}
}

func TestClientPipeline(t *testing.T) {
	_, addr := startServer(t, Config{})
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		c := newClient(t, addr, proto)
		k := "pipe" + strconv.Itoa(proto)
		pipe := c.Pipeline()
		adds := make([]*redis.BoolCmd, 5000)
		exists := make([]*redis.BoolCmd, 5000)
		for i := range adds {
			adds[i] = pipe.BFAdd(ctx, k, i)
			exists[i] = pipe.BFExists(ctx, k, i)
		}
		cmds, err := pipe.Exec(ctx)
		if err != nil || len(cmds) != 10000 {
			t.Fatalf("RESP%d: a pipeline of 10000 commands: %d replies, %v", proto, len(cmds), err)
		}
		ones := 0
		for i := range adds {
			if adds[i].Val() {
				ones++
			}
			if !exists[i].Val() {
				t.Fatalf("RESP%d: item %d added in the pipeline, then not found in it", proto, i)
			}
		}
		if n := c.BFCard(ctx, k).Val(); n != int64(ones) || ones < 4900 {
			t.Errorf("RESP%d: BF.CARD %d, %d adds answered true; want equal, near 5000", proto, n, ones)
		}
	}
	// Raw: 10000 commands in one write, their replies in order.
	r := dialRaw(t, addr)
	var b strings.Builder
	var want strings.Builder
	for i := range 10000 {
		b.WriteString(encodeCommand("ECHO", strconv.Itoa(i)))
		want.WriteString(rawBulk(strconv.Itoa(i)))
	}
	r.send(b.String())
	var got strings.Builder
	for range 10000 {
		got.WriteString(r.reply())
	}
	if got.String() != want.String() {
		t.Error("10000 pipelined ECHOs: replies differ from the commands' order")
	}
}

// TestClientPartialCommand: the reply to a whole command is sent while the
// next one is still arriving.
func TestClientPartialCommand(t *testing.T) {
	_, addr := startServer(t, Config{})
	r := dialRaw(t, addr)
	r.send("PING\r\n*2\r\n$4\r\nECHO\r\n$5\r\nhel")
	if got := r.reply(); got != rawStatus("PONG") {
		t.Fatalf("PING before a partial command: %q", got)
	}
	r.send("lo\r\n")
	if got := r.reply(); got != rawBulk("hello") {
		t.Fatalf("the rest of the ECHO: %q", got)
	}
}

func TestClientConcurrent(t *testing.T) {
	_, addr := startServer(t, Config{})
	ctx := context.Background()
	const workers, rounds = 50, 10
	var wg sync.WaitGroup
	sharedOnes := make([]int, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(t, addr, 2+w%2)
			own := "own" + strconv.Itoa(w)
			ones := 0
			for i := range rounds {
				item := fmt.Sprintf("w%d-%d", w, i)
				added, err := c.BFMAdd(ctx, own, item, item+"b").Result()
				if err != nil || len(added) != 2 {
					t.Errorf("worker %d: BFMAdd: %v, %v", w, added, err)
					return
				}
				for _, a := range added {
					if a {
						ones++
					}
				}
				if shared, err := c.BFAdd(ctx, "shared", item).Result(); err != nil {
					t.Errorf("worker %d: BFAdd shared: %v", w, err)
				} else if shared {
					sharedOnes[w]++
				}
				if found, err := c.BFMExists(ctx, own, item, item+"b").Result(); err != nil || !found[0] || !found[1] {
					t.Errorf("worker %d: BFMExists right after adding: %v, %v", w, found, err)
				}
				tmp := own + "tmp"
				c.BFAdd(ctx, tmp, item)
				c.Expire(ctx, tmp, 100*time.Second)
				if ttl := c.TTL(ctx, tmp).Val(); ttl <= 0 {
					t.Errorf("worker %d: TTL after EXPIRE: %v", w, ttl)
				}
				c.Del(ctx, tmp)
				if i%10 == 0 {
					c.Scan(ctx, 0, "own*", 100)
					c.Info(ctx, "keyspace")
				}
			}
			if n, err := c.BFCard(ctx, own).Result(); err != nil || n != int64(ones) {
				t.Errorf("worker %d: BFCard %d, %v; want %d (its true answers)", w, n, err, ones)
			}
		}()
	}
	wg.Wait()
	c := newClient(t, addr, 2)
	total := 0
	for _, n := range sharedOnes {
		total += n
	}
	if n := c.BFCard(ctx, "shared").Val(); n != int64(total) || total < workers*rounds*9/10 {
		t.Errorf("shared filter: BF.CARD %d, %d adds answered true; want equal", n, total)
	}
	for w := range workers {
		if found := c.BFExists(ctx, "shared", fmt.Sprintf("w%d-%d", w, rounds-1)).Val(); !found {
			t.Errorf("shared filter lacks worker %d's last item", w)
		}
	}
}
