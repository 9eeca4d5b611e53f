package server

import (
	"context"
	"reflect"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestClientTypedCF runs go-redis's typed cuckoo filter API (the CF*
// methods a user of RedisBloom calls) against the server, in RESP2 and
// RESP3: each answers with its typed value, as against RedisBloom.
func TestClientTypedCF(t *testing.T) {
	inBothProtocols(t, func(t *testing.T, c *redis.Client, key func(string) string) {
		ctx := context.Background()
		for what, cmd := range map[string]*redis.StatusCmd{
			"CFReserve":              c.CFReserve(ctx, key("r"), 1000),
			"CFReserveExpansion":     c.CFReserveExpansion(ctx, key("x"), 1000, 2),
			"CFReserveBucketSize":    c.CFReserveBucketSize(ctx, key("b"), 1000, 4),
			"CFReserveMaxIterations": c.CFReserveMaxIterations(ctx, key("m"), 1000, 5),
			"CFReserveWithArgs": c.CFReserveWithArgs(ctx, key("w"),
				&redis.CFReserveOptions{Capacity: 64, BucketSize: 2, MaxIterations: 10, Expansion: 2}),
		} {
			if v, err := cmd.Result(); err != nil || v != "OK" {
				t.Errorf("%s: %q, %v; want OK", what, v, err)
			}
		}
		if err := c.CFReserve(ctx, key("r"), 1000).Err(); err == nil || err.Error() != "ERR item exists" {
			t.Errorf("CFReserve of an existing key: %v", err)
		}
		if added, err := c.CFAdd(ctx, key("r"), "a").Result(); err != nil || !added {
			t.Errorf("CFAdd: %v, %v", added, err)
		}
		if added, err := c.CFAddNX(ctx, key("r"), "a").Result(); err != nil || added {
			t.Errorf("CFAddNX of a present item: %v, %v", added, err)
		}
		c.CFAdd(ctx, key("r"), "a")
		if n, err := c.CFCount(ctx, key("r"), "a").Result(); err != nil || n != 2 {
			t.Errorf("CFCount: %d, %v; want 2", n, err)
		}
		if found, err := c.CFExists(ctx, key("r"), "a").Result(); err != nil || !found {
			t.Errorf("CFExists: %v, %v", found, err)
		}
		if got, err := c.CFMExists(ctx, key("r"), "a", "zz").Result(); err != nil || !reflect.DeepEqual(got, []bool{true, false}) {
			t.Errorf("CFMExists: %v, %v", got, err)
		}
		if deleted, err := c.CFDel(ctx, key("r"), "a").Result(); err != nil || !deleted {
			t.Errorf("CFDel: %v, %v", deleted, err)
		}
		if got, err := c.CFInsert(ctx, key("i"), &redis.CFInsertOptions{Capacity: 100}, "a", "b").Result(); err != nil ||
			!reflect.DeepEqual(got, []bool{true, true}) {
			t.Errorf("CFInsert: %v, %v", got, err)
		}
		if got, err := c.CFInsertNX(ctx, key("i"), &redis.CFInsertOptions{NoCreate: true}, "a", "c").Result(); err != nil ||
			!reflect.DeepEqual(got, []int64{0, 1}) {
			t.Errorf("CFInsertNX: %v, %v", got, err)
		}
		if err := c.CFInsert(ctx, key("none"), &redis.CFInsertOptions{NoCreate: true}, "a").Err(); err == nil || err.Error() != "ERR not found" {
			t.Errorf("CFInsert NOCREATE on a missing key: %v", err)
		}
		want := redis.CFInfo{Size: 40 + 16 + 1024, NumBuckets: 512, NumFilters: 1, NumItemsInserted: 1,
			NumItemsDeleted: 1, BucketSize: 2, ExpansionRate: 1, MaxIteration: 20}
		if got, err := c.CFInfo(ctx, key("r")).Result(); err != nil || got != want {
			t.Errorf("CFInfo: %+v, %v; want %+v", got, err, want)
		}
		clientCFDump(t, c, key("i"), key("copy"))
	})
}

// inBothProtocols runs test on a fresh server with a go-redis client in
// RESP2, then in RESP3, each with keys of its own (key).
func inBothProtocols(t *testing.T, test func(t *testing.T, c *redis.Client, key func(string) string)) {
	_, addr := startServer(t, Config{})
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			test(t, newClient(t, addr, proto), func(s string) string { return strconv.Itoa(proto) + ":" + s })
		})
	}
}

// clientCFDump copies src to dst with CFScanDump and CFLoadChunk.
func clientCFDump(t *testing.T, c *redis.Client, src, dst string) {
	ctx := context.Background()
	for it, n := int64(0), 0; ; n++ {
		d, err := c.CFScanDump(ctx, src, it).Result()
		if err == redis.Nil && d.Iter == 0 {
			break // RedisBloom's end, [0, nil], reads as redis.Nil
		}
		if err != nil || n > 10 {
			t.Fatalf("CFScanDump at %d: %+v, %v", it, d, err)
		}
		if it = d.Iter; it == 0 {
			break
		}
		if err := c.CFLoadChunk(ctx, dst, it, d.Data).Err(); err != nil {
			t.Fatalf("CFLoadChunk at %d: %v", it, err)
		}
	}
	a, _ := c.CFInfo(ctx, src).Result()
	b, err := c.CFInfo(ctx, dst).Result()
	if err != nil || a != b {
		t.Errorf("the copy's CFInfo %+v (%v), the source's %+v", b, err, a)
	}
	if got, err := c.CFMExists(ctx, dst, "a", "b", "c").Result(); err != nil || !reflect.DeepEqual(got, []bool{true, true, true}) {
		t.Errorf("CFMExists on the copy: %v, %v", got, err)
	}
}
