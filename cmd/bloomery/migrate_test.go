package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomery/bloom/internal/redistest"
)

// fillFilters makes n filters key:0 … on c, each with items of its own,
// every third with an expiry an hour away.
func fillFilters(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		key := fmt.Sprintf("key:%d", i)
		items := make([]any, 1+i%300)
		for j := range items {
			items[j] = fmt.Sprintf("item:%d:%d", i, j)
		}
		if err := c.BFMAdd(ctx, key, items...).Err(); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := c.Expire(ctx, key, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// assertCopies checks that every key:i on dst answers as on src: BF.INFO,
// the expiry and every item added.
func assertCopies(t *testing.T, src, dst *redis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		key := fmt.Sprintf("key:%d", i)
		if err := compareKey(ctx, src, dst, key, 200); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		items := make([]any, 1+i%300)
		for j := range items {
			items[j] = fmt.Sprintf("item:%d:%d", i, j)
		}
		found, err := dst.BFMExists(ctx, key, items...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for j, f := range found {
			if !f {
				t.Fatalf("%s: item %v lost in the copy", key, items[j])
			}
		}
	}
}

func clientOf(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMigrateBetweenServers: migrate copies every filter with its
// expiry; a second run copies nothing (already there); a key changed on
// DST is a conflict until --replace; a temporary key an interrupted run
// left behind is replaced, never kept.
func TestMigrateBetweenServers(t *testing.T) {
	srcAddr, dstAddr := startBloomery(t), startBloomery(t)
	src, dst := clientOf(t, srcAddr), clientOf(t, dstAddr)
	const n = 120
	fillFilters(t, src, n)
	ctx := context.Background()
	// What an interrupted run leaves: a half-loaded temporary key.
	if err := dst.BFAdd(ctx, "key:5"+migrateTempSuffix, "junk").Err(); err != nil {
		t.Fatal(err)
	}
	srcURL, dstURL := "bloomery://"+srcAddr, "bloomery://"+dstAddr

	code, out, errOut := runCLI(t, "migrate", srcURL, dstURL)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied:            %d ", n)) ||
		!strings.Contains(out, fmt.Sprintf("verified:          %d, differing: 0", n)) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	assertCopies(t, src, dst, n)
	if k, _ := dst.Exists(ctx, "key:5"+migrateTempSuffix).Result(); k != 0 {
		t.Error("the temporary key is still on DST")
	}

	code, out, _ = runCLI(t, "migrate", srcURL, dstURL)
	if code != 0 || !strings.Contains(out, "copied:            0 ") || !strings.Contains(out, fmt.Sprintf("already there:     %d", n)) {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}

	if err := dst.BFAdd(ctx, "key:7", "only on DST").Err(); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "migrate", "--match", "key:7", srcURL, dstURL)
	if code != 0 || !strings.Contains(out, "conflicts:         1") {
		t.Fatalf("changed key: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "migrate", "--match", "key:7", "--replace", srcURL, dstURL)
	if code != 0 || !strings.Contains(out, "copied:            1 ") {
		t.Fatalf("--replace: exit %d\n%s", code, out)
	}
	assertCopies(t, src, dst, n)
}

func TestMigrateUsage(t *testing.T) {
	for _, args := range [][]string{
		{"migrate", "bloomery://127.0.0.1:1"},
		{"migrate", "bloomery://127.0.0.1:1/key", "bloomery://127.0.0.1:2"},
		{"migrate", "http://x", "bloomery://127.0.0.1:2"},
		{"migrate", "--probes", "-1", "bloomery://127.0.0.1:1", "bloomery://127.0.0.1:2"},
	} {
		if code, _, errOut := runCLI(t, args...); code != exitUsage || errOut == "" {
			t.Errorf("%q: exit %d, %q; want a usage error", args, code, errOut)
		}
	}
}

// TestMigrateRedisBloom moves filters from a real RedisBloom into
// bloomery serve (skipping the keys of other types) and back, when
// $BLOOMERY_REDISBLOOM names a RedisBloom module build.
func TestMigrateRedisBloom(t *testing.T) {
	module := os.Getenv("BLOOMERY_REDISBLOOM")
	if module == "" {
		t.Skip("BLOOMERY_REDISBLOOM is not set: no RedisBloom module build to migrate from (see DEVELOPERS.md)")
	}
	rb := redistest.Start(t, "--loadmodule", module)
	rbc := clientOf(t, rb.Addr())
	const n = 60
	fillFilters(t, rbc, n)
	ctx := context.Background()
	rbc.Set(ctx, "a string", "x", 0)
	rbc.LPush(ctx, "a list", "x")
	bAddr := startBloomery(t)
	bc := clientOf(t, bAddr)

	code, out, errOut := runCLI(t, "migrate", "redis://"+rb.Addr(), "bloomery://"+bAddr)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied:            %d ", n)) ||
		!strings.Contains(out, "skipped:           1 of type string") || !strings.Contains(out, "skipped:           1 of type list") {
		t.Fatalf("RedisBloom → bloomery: exit %d\n%s%s", code, out, errOut)
	}
	assertCopies(t, rbc, bc, n)

	back := redistest.Start(t, "--loadmodule", module)
	backc := clientOf(t, back.Addr())
	code, out, errOut = runCLI(t, "migrate", "bloomery://"+bAddr, "redis://"+back.Addr())
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied:            %d ", n)) {
		t.Fatalf("bloomery → RedisBloom: exit %d\n%s%s", code, out, errOut)
	}
	assertCopies(t, bc, backc, n)
}
