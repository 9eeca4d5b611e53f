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

// keyOf is the name of the i-th filter of kind that fillFilters makes.
func keyOf(kind filterKind, i int) string {
	if kind == cuckooKind {
		return fmt.Sprintf("cf:%d", i)
	}
	return fmt.Sprintf("key:%d", i)
}

// itemsOf is what fillFilters adds to its i-th filter.
func itemsOf(i int) []any {
	items := make([]any, 1+i%300)
	for j := range items {
		items[j] = fmt.Sprintf("item:%d:%d", i, j)
	}
	return items
}

// fillFilters makes n filters of kind on c (key:0 … for Bloom filters,
// cf:0 … for cuckoo filters), each with items of its own, every third
// with an expiry an hour away. cf:0 gets 3000 items more in a filter of
// capacity 100, which makes it 20-odd sub-filters: a dump of many chunks.
func fillFilters(t *testing.T, c *redis.Client, kind filterKind, n int) {
	t.Helper()
	ctx := context.Background()
	if kind == cuckooKind {
		if err := c.CFReserve(ctx, keyOf(kind, 0), 100).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		key := keyOf(kind, i)
		items := itemsOf(i)
		if kind == cuckooKind && i == 0 {
			for j := range 3000 {
				items = append(items, fmt.Sprintf("more:%d", j))
			}
		}
		add := append([]any{"BF.MADD", key}, items...)
		if kind == cuckooKind {
			add = append([]any{"CF.INSERT", key, "ITEMS"}, items...)
		}
		if err := c.Do(ctx, add...).Err(); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := c.Expire(ctx, key, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// assertCopies checks that every filter of kind fillFilters made on src
// answers on dst as on src: BF.INFO (CF.INFO), the expiry and every
// item added.
func assertCopies(t *testing.T, src, dst *redis.Client, kind filterKind, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		key := keyOf(kind, i)
		if err := compareKey(ctx, src, dst, kind, key, 200); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		items := itemsOf(i)
		found, err := dst.Do(ctx, append([]any{kind.cmd("MEXISTS"), key}, items...)...).BoolSlice()
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

// fillBoth makes n Bloom filters and n cuckoo filters on c.
func fillBoth(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	fillFilters(t, c, bloomKind, n)
	fillFilters(t, c, cuckooKind, n)
}

// assertBoth is assertCopies of what fillBoth made.
func assertBoth(t *testing.T, src, dst *redis.Client, n int) {
	t.Helper()
	assertCopies(t, src, dst, bloomKind, n)
	assertCopies(t, src, dst, cuckooKind, n)
}

// copiedLine is the report's line for copied keys, up to the rate.
func copiedLine(n int) string { return fmt.Sprintf("copied:            %d ", n) }

func clientOf(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMigrateBetweenServers: migrate copies every filter, Bloom and
// cuckoo, with its expiry; a second run copies nothing (already there);
// a key changed on DST is a conflict until --replace; a temporary key an
// interrupted run left behind is replaced, never kept.
func TestMigrateBetweenServers(t *testing.T) {
	srcAddr, dstAddr := startBloomery(t), startBloomery(t)
	src, dst := clientOf(t, srcAddr), clientOf(t, dstAddr)
	const n = 120
	fillBoth(t, src, n)
	ctx := context.Background()
	// What an interrupted run leaves: a half-loaded temporary key.
	if err := dst.BFAdd(ctx, "key:5"+migrateTempSuffix, "junk").Err(); err != nil {
		t.Fatal(err)
	}
	srcURL, dstURL := "bloomery://"+srcAddr, "bloomery://"+dstAddr

	code, out, errOut := runCLI(t, "migrate", srcURL, dstURL)
	if code != 0 || !strings.Contains(out, copiedLine(2*n)) || !strings.Contains(out, fmt.Sprintf("of which cuckoo:   %d\n", n)) ||
		!strings.Contains(out, fmt.Sprintf("verified:          %d, differing: 0", 2*n)) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	assertBoth(t, src, dst, n)
	if k, _ := dst.Exists(ctx, "key:5"+migrateTempSuffix).Result(); k != 0 {
		t.Error("the temporary key is still on DST")
	}

	code, out, _ = runCLI(t, "migrate", srcURL, dstURL)
	if code != 0 || !strings.Contains(out, copiedLine(0)) || !strings.Contains(out, fmt.Sprintf("already there:     %d", 2*n)) {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}

	if err := dst.BFAdd(ctx, "key:7", "only on DST").Err(); err != nil {
		t.Fatal(err)
	}
	if err := dst.CFAdd(ctx, "cf:7", "only on DST").Err(); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "migrate", "--match", "*:7", srcURL, dstURL)
	if code != 0 || !strings.Contains(out, "conflicts:         2") {
		t.Fatalf("changed keys: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "migrate", "--match", "*:7", "--replace", srcURL, dstURL)
	if code != 0 || !strings.Contains(out, copiedLine(2)) {
		t.Fatalf("--replace: exit %d\n%s", code, out)
	}
	assertBoth(t, src, dst, n)
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

// TestMigrateRedisBloom moves Bloom and cuckoo filters from a real
// RedisBloom into bloomery serve (skipping the keys of other types) and
// back, when $BLOOMERY_REDISBLOOM names a RedisBloom module build.
func TestMigrateRedisBloom(t *testing.T) {
	module := os.Getenv("BLOOMERY_REDISBLOOM")
	if module == "" {
		t.Skip("BLOOMERY_REDISBLOOM is not set: no RedisBloom module build to migrate from (see DEVELOPERS.md)")
	}
	rb := redistest.Start(t, "--loadmodule", module)
	rbc := clientOf(t, rb.Addr())
	const n = 60
	fillBoth(t, rbc, n)
	ctx := context.Background()
	rbc.Set(ctx, "a string", "x", 0)
	rbc.LPush(ctx, "a list", "x")
	bAddr := startBloomery(t)
	bc := clientOf(t, bAddr)

	code, out, errOut := runCLI(t, "migrate", "redis://"+rb.Addr(), "bloomery://"+bAddr)
	if code != 0 || !strings.Contains(out, copiedLine(2*n)) ||
		!strings.Contains(out, "skipped:           1 of type string") || !strings.Contains(out, "skipped:           1 of type list") {
		t.Fatalf("RedisBloom → bloomery: exit %d\n%s%s", code, out, errOut)
	}
	assertBoth(t, rbc, bc, n)

	back := redistest.Start(t, "--loadmodule", module)
	backc := clientOf(t, back.Addr())
	code, out, errOut = runCLI(t, "migrate", "bloomery://"+bAddr, "redis://"+back.Addr())
	if code != 0 || !strings.Contains(out, copiedLine(2*n)) {
		t.Fatalf("bloomery → RedisBloom: exit %d\n%s%s", code, out, errOut)
	}
	assertBoth(t, bc, backc, n)
}
