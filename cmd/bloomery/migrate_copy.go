package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// filterKind is a type of key migrate moves: what TYPE answers for it,
// in RedisBloom and in bloomery serve, and its commands' prefix.
type filterKind struct {
	typ, prefix string
}

// The kinds migrate moves: Bloom filters (BF.*) and cuckoo filters (CF.*).
var (
	bloomKind  = filterKind{"MBbloom--", "BF"}
	cuckooKind = filterKind{"MBbloomCF", "CF"}
)

// kindOf is the kind of a key of type typ, or false for a type migrate
// skips.
func kindOf(typ string) (filterKind, bool) {
	for _, k := range []filterKind{bloomKind, cuckooKind} {
		if k.typ == typ {
			return k, true
		}
	}
	return filterKind{}, false
}

// cmd is the name of the kind's command op: "BF.SCANDUMP" for "SCANDUMP".
func (k filterKind) cmd(op string) string { return k.prefix + "." + op }

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
	var copied []migrated
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
			kind, ok := kindOf(types[i])
			switch {
			case types[i] == "none":
				rep.vanished++
			case !ok:
				rep.otherTypes[types[i]]++
			case copyOne(ctx, sc, dc, kind, key, o, rep):
				copied = append(copied, migrated{key, kind})
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
		for _, m := range copied {
			verifyOne(ctx, sc, dc, m.kind, m.key, o.probes, rep)
		}
	}
	return rep, nil
}

// migrated is a key now on DST, for the verification.
type migrated struct {
	key  string
	kind filterKind
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
func copyOne(ctx context.Context, sc, dc *redis.Client, kind filterKind, key string, o migrateOptions, rep *migrateReport) bool {
	pttl, err := sc.PTTL(ctx, key).Result()
	readAt := time.Now()
	if err != nil {
		rep.fail(key, fmt.Errorf("SRC PTTL: %w", err))
		return false
	}
	chunks, err := scanDump(ctx, sc, kind, key)
	switch {
	case isNotFound(err) || pttl == -2:
		rep.vanished++
		return false
	case err != nil:
		rep.fail(key, fmt.Errorf("SRC %s: %w", kind.cmd("SCANDUMP"), err))
		return false
	}
	if n, err := dc.Exists(ctx, key).Result(); err != nil {
		rep.fail(key, fmt.Errorf("DST EXISTS: %w", err))
		return false
	} else if n == 1 {
		have, err := scanDump(ctx, dc, kind, key)
		switch {
		case err == nil && sameDump(have, chunks):
			rep.present++
			return true
		case !o.replace:
			rep.conflicts++
			return false
		}
	}
	if err := loadDump(ctx, dc, kind, key, chunks); err != nil {
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
	if kind == cuckooKind {
		rep.cuckoo++
	}
	for _, c := range chunks {
		rep.bytes += int64(len(c.Data))
	}
	return true
}

// scanDump reads key's whole dump.
func scanDump(ctx context.Context, c *redis.Client, kind filterKind, key string) ([]redis.ScanDump, error) {
	var chunks []redis.ScanDump
	for iter := int64(0); ; {
		dump := c.BFScanDump
		if kind == cuckooKind {
			dump = c.CFScanDump
		}
		d, err := dump(ctx, key, iter).Result()
		if errors.Is(err, redis.Nil) {
			return chunks, nil // CF.SCANDUMP's end, [0, nil], reads as redis.Nil
		}
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
func loadDump(ctx context.Context, c *redis.Client, kind filterKind, key string, chunks []redis.ScanDump) error {
	tmp := key + migrateTempSuffix
	if err := c.Del(ctx, tmp).Err(); err != nil {
		return fmt.Errorf("DST DEL %s: %w", tmp, err)
	}
	for _, ch := range chunks {
		if err := c.Do(ctx, kind.cmd("LOADCHUNK"), tmp, ch.Iter, ch.Data).Err(); err != nil {
			c.Del(ctx, tmp)
			return fmt.Errorf("DST %s: %w%s", kind.cmd("LOADCHUNK"), err, loadHint(kind, err))
		}
	}
	if err := c.Rename(ctx, tmp, key).Err(); err != nil {
		c.Del(ctx, tmp)
		return fmt.Errorf("DST RENAME: %w", err)
	}
	return nil
}

// loadHint explains a refused Bloom filter dump: RedisBloom loads only
// filters in its own layout, so filters made by bloomery serve in
// bloomery's layout cannot move to it. (Cuckoo filters have one layout.)
func loadHint(kind filterKind, err error) string {
	if kind == bloomKind && strings.Contains(err.Error(), "invalid") || strings.Contains(err.Error(), "received bad data") {
		return " (DST refuses the dump's format: RedisBloom loads only filters in RedisBloom's layout, " +
			"which bloomery serve makes with --filter-layout redisbloom)"
	}
	return ""
}

func sameDump(a, b []redis.ScanDump) bool {
	return slices.Equal(a, b)
}

func isNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "not found")
}

// verifyOne checks that DST's key answers as SRC's: BF.INFO (CF.INFO),
// the expiry (within 2 s) and probes random items.
func verifyOne(ctx context.Context, sc, dc *redis.Client, kind filterKind, key string, probes int, rep *migrateReport) {
	if err := compareKey(ctx, sc, dc, kind, key, probes); err != nil {
		rep.verifyFailed++
		if rep.verifyErr == "" {
			rep.verifyErr = fmt.Sprintf("%q: %v", key, err)
		}
		return
	}
	rep.verified++
}

func compareKey(ctx context.Context, sc, dc *redis.Client, kind filterKind, key string, probes int) error {
	info, mexists := kind.cmd("INFO"), kind.cmd("MEXISTS")
	si, err := sc.Do(ctx, info, key).Result()
	if err != nil {
		return fmt.Errorf("SRC %s: %w", info, err)
	}
	di, err := dc.Do(ctx, info, key).Result()
	if err != nil {
		return fmt.Errorf("DST %s: %w", info, err)
	}
	if fmt.Sprint(si) != fmt.Sprint(di) {
		return fmt.Errorf("%s differs: SRC %v, DST %v", info, si, di)
	}
	st, _ := sc.PTTL(ctx, key).Result()
	dt, _ := dc.PTTL(ctx, key).Result()
	if (st < 0) != (dt < 0) || (st >= 0 && (st-dt > 2*time.Second || dt-st > 2*time.Second)) {
		return fmt.Errorf("expiry differs: SRC PTTL %v, DST PTTL %v", st, dt)
	}
	for done := 0; done < probes; {
		n := min(probes-done, 1000)
		args := []any{mexists, key}
		for range n {
			args = append(args, randomProbe())
		}
		items := args[2:]
		a, err := sc.Do(ctx, args...).BoolSlice()
		if err != nil {
			return fmt.Errorf("SRC %s: %w", mexists, err)
		}
		b, err := dc.Do(ctx, args...).BoolSlice()
		if err != nil {
			return fmt.Errorf("DST %s: %w", mexists, err)
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
