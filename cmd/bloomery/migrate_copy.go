package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// bloomType is what TYPE answers for a Bloom filter key, in RedisBloom
// and in bloomery serve.
const bloomType = "MBbloom--"

// migrateTempSuffix names the temporary key a filter is loaded under on
// DST before it is renamed over its name.
const migrateTempSuffix = ":bloomery-migrate-tmp"

// parseServerURL parses SRC or DST of migrate: a server, no key name.
func parseServerURL(arg, s string) (filterURL, error) {
	fu, err := parseFilterURL(arg, s, false)
	if err != nil {
		return fu, err
	}
	if fu.name != "" {
		return fu, usageErrorf("invalid %s %q: migrate takes a server, not a key (drop %q)", arg, redactURL(s), fu.name)
	}
	return fu, nil
}

// runMigrate copies the keys, then verifies them (migrate's doc).
func runMigrate(ctx context.Context, stderr io.Writer, src, dst filterURL, o migrateOptions) (*migrateReport, error) {
	rep := &migrateReport{otherTypes: map[string]int{}}
	sc, dc := src.client(), dst.client()
	defer sc.Close()
	defer dc.Close()
	for _, s := range []struct {
		arg string
		fu  filterURL
		c   *redis.Client
	}{{"SRC", src, sc}, {"DST", dst, dc}} {
		if err := s.c.Ping(ctx).Err(); err != nil {
			return rep, fmt.Errorf("%s %s: %w", s.arg, s.fu.text, err)
		}
	}
	total, _ := sc.DBSize(ctx).Result()
	bar := newProgress(stderr, "migrate", total)
	start := time.Now()
	var copied []string
	for cursor := uint64(0); ; {
		keys, next, err := sc.Scan(ctx, cursor, o.match, int64(o.scanCount)).Result()
		if err != nil {
			bar.finish()
			return rep, fmt.Errorf("SRC %s: SCAN: %w", src.text, err)
		}
		types, err := keyTypes(ctx, sc, keys)
		if err != nil {
			bar.finish()
			return rep, fmt.Errorf("SRC %s: TYPE: %w", src.text, err)
		}
		for i, key := range keys {
			rep.scanned++
			switch {
			case types[i] == "none":
				rep.vanished++
			case types[i] != bloomType:
				rep.otherTypes[types[i]]++
			default:
				if copyOne(ctx, sc, dc, key, o, rep) {
					copied = append(copied, key)
				}
			}
			bar.update(1, int64(rep.scanned))
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	bar.finish()
	rep.took = time.Since(start)
	if o.verify {
		for _, key := range copied {
			verifyOne(ctx, sc, dc, key, o.probes, rep)
		}
	}
	return rep, nil
}

// keyTypes asks TYPE of every key in one round trip.
func keyTypes(ctx context.Context, c *redis.Client, keys []string) ([]string, error) {
	cmds := make([]*redis.StatusCmd, len(keys))
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Type(ctx, k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	types := make([]string, len(keys))
	for i, c := range cmds {
		types[i] = c.Val()
	}
	return types, nil
}

// copyOne copies key, counting the outcome in rep; it reports whether
// the key is now DST's copy of SRC's (copied, or already there).
func copyOne(ctx context.Context, sc, dc *redis.Client, key string, o migrateOptions, rep *migrateReport) bool {
	pttl, err := sc.PTTL(ctx, key).Result()
	readAt := time.Now()
	if err != nil {
		rep.fail(key, fmt.Errorf("SRC PTTL: %w", err))
		return false
	}
	chunks, err := scanDump(ctx, sc, key)
	switch {
	case isNotFound(err) || pttl == -2:
		rep.vanished++
		return false
	case err != nil:
		rep.fail(key, fmt.Errorf("SRC BF.SCANDUMP: %w", err))
		return false
	}
	if n, err := dc.Exists(ctx, key).Result(); err != nil {
		rep.fail(key, fmt.Errorf("DST EXISTS: %w", err))
		return false
	} else if n == 1 {
		have, err := scanDump(ctx, dc, key)
		switch {
		case err == nil && sameDump(have, chunks):
			rep.present++
			return true
		case !o.replace:
			rep.conflicts++
			return false
		}
	}
	if err := loadDump(ctx, dc, key, chunks); err != nil {
		rep.fail(key, err)
		return false
	}
	if pttl > 0 {
		at := readAt.Add(pttl)
		if err := dc.PExpireAt(ctx, key, at).Err(); err != nil {
			rep.fail(key, fmt.Errorf("DST PEXPIREAT: %w", err))
			return false
		}
	}
	rep.copied++
	for _, c := range chunks {
		rep.bytes += int64(len(c.Data))
	}
	return true
}

// scanDump reads key's whole dump.
func scanDump(ctx context.Context, c *redis.Client, key string) ([]redis.ScanDump, error) {
	var chunks []redis.ScanDump
	for iter := int64(0); ; {
		d, err := c.BFScanDump(ctx, key, iter).Result()
		if err != nil {
			return nil, err
		}
		if d.Iter == 0 {
			return chunks, nil
		}
		chunks = append(chunks, d)
		iter = d.Iter
	}
}

// loadDump loads chunks under a temporary name on c and renames it over
// key: key is replaced whole or not at all.
func loadDump(ctx context.Context, c *redis.Client, key string, chunks []redis.ScanDump) error {
	tmp := key + migrateTempSuffix
	if err := c.Del(ctx, tmp).Err(); err != nil {
		return fmt.Errorf("DST DEL %s: %w", tmp, err)
	}
	for _, ch := range chunks {
		if err := c.BFLoadChunk(ctx, tmp, ch.Iter, ch.Data).Err(); err != nil {
			c.Del(ctx, tmp)
			return fmt.Errorf("DST BF.LOADCHUNK: %w%s", err, loadHint(err))
		}
	}
	if err := c.Rename(ctx, tmp, key).Err(); err != nil {
		c.Del(ctx, tmp)
		return fmt.Errorf("DST RENAME: %w", err)
	}
	return nil
}

// loadHint explains a refused dump: RedisBloom loads only filters in its
// own layout, so filters made by bloomery serve in bloomery's layout
// cannot move to it.
func loadHint(err error) string {
	if strings.Contains(err.Error(), "invalid") || strings.Contains(err.Error(), "received bad data") {
		return " (DST refuses the dump's format: RedisBloom loads only filters in RedisBloom's layout, " +
			"which bloomery serve makes with --layout redisbloom)"
	}
	return ""
}

func sameDump(a, b []redis.ScanDump) bool {
	return slices.Equal(a, b)
}

func isNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "not found")
}

// verifyOne checks that DST's key answers as SRC's: BF.INFO, the
// expiry (within 2 s) and probes random items.
func verifyOne(ctx context.Context, sc, dc *redis.Client, key string, probes int, rep *migrateReport) {
	if err := compareKey(ctx, sc, dc, key, probes); err != nil {
		rep.verifyFailed++
		if rep.verifyErr == "" {
			rep.verifyErr = fmt.Sprintf("%q: %v", key, err)
		}
		return
	}
	rep.verified++
}

func compareKey(ctx context.Context, sc, dc *redis.Client, key string, probes int) error {
	si, err := sc.Do(ctx, "BF.INFO", key).Result()
	if err != nil {
		return fmt.Errorf("SRC BF.INFO: %w", err)
	}
	di, err := dc.Do(ctx, "BF.INFO", key).Result()
	if err != nil {
		return fmt.Errorf("DST BF.INFO: %w", err)
	}
	if fmt.Sprint(si) != fmt.Sprint(di) {
		return fmt.Errorf("BF.INFO differs: SRC %v, DST %v", si, di)
	}
	st, _ := sc.PTTL(ctx, key).Result()
	dt, _ := dc.PTTL(ctx, key).Result()
	if (st < 0) != (dt < 0) || (st >= 0 && (st-dt > 2*time.Second || dt-st > 2*time.Second)) {
		return fmt.Errorf("expiry differs: SRC PTTL %v, DST PTTL %v", st, dt)
	}
	for done := 0; done < probes; {
		n := min(probes-done, 1000)
		items := make([]any, n)
		for i := range items {
			items[i] = randomProbe()
		}
		a, err := sc.BFMExists(ctx, key, items...).Result()
		if err != nil {
			return fmt.Errorf("SRC BF.MEXISTS: %w", err)
		}
		b, err := dc.BFMExists(ctx, key, items...).Result()
		if err != nil {
			return fmt.Errorf("DST BF.MEXISTS: %w", err)
		}
		if i := slices.Index(boolsDiffer(a, b), true); i >= 0 {
			return fmt.Errorf("item %q: SRC answers %v, DST %v", items[i], a[i], b[i])
		}
		done += n
	}
	return nil
}

// boolsDiffer marks where a and b differ (all of a when their lengths do).
func boolsDiffer(a, b []bool) []bool {
	d := make([]bool, len(a))
	for i := range a {
		d[i] = i >= len(b) || a[i] != b[i]
	}
	return d
}

// randomProbe is an item nobody added, almost surely: 128 random bits.
func randomProbe() string { return "probe:" + rand.Text() }
