package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// pWriteMix makes filters of several kinds, with TTLs, deletes, renames, a
// flush, a LOADCHUNK copy, and returns the items each key must hold.
func pWriteMix(t testing.TB, ps *pServer) map[string][]any {
	t.Helper()
	want := map[string][]any{}
	add := func(key string, its []any) {
		ps.do(t, append([]any{"BF.MADD", key}, its...)...)
		want[key] = append(want[key], its...)
	}
	add("gone", pItems("gone", 10))
	ps.do(t, "FLUSHALL")
	delete(want, "gone")
	ps.do(t, "BF.RESERVE", "grown", "0.001", "50", "EXPANSION", "3")
	add("grown", pItems("grown", 2000)) // several sub-filters
	ps.do(t, "BF.RESERVE", "fixed", "0.01", "1000", "NONSCALING")
	add("fixed", pItems("fixed", 300))
	ps.do(t, "BF.ADD", "single", "x")
	want["single"] = []any{"x"}
	ps.do(t, "BF.INSERT", "ins", "CAPACITY", "500", "ERROR", "0.05", "ITEMS", "a", "b", "c")
	want["ins"] = []any{"a", "b", "c"}
	add("ttl", pItems("ttl", 5))
	ps.do(t, "PEXPIRE", "ttl", "3600000")
	add("persisted", pItems("p", 5))
	ps.do(t, "EXPIRE", "persisted", "3600")
	ps.do(t, "PERSIST", "persisted")
	add("old-name", pItems("renamed", 50))
	ps.do(t, "RENAME", "old-name", "new-name")
	want["new-name"] = want["old-name"]
	delete(want, "old-name")
	add("deleted", pItems("d", 5))
	ps.do(t, "DEL", "deleted")
	delete(want, "deleted")
	add("expired", pItems("e", 5))
	ps.do(t, "PEXPIRE", "expired", "1")
	delete(want, "expired")
	for it := int64(0); ; {
		r := ps.do(t, "BF.SCANDUMP", "grown", it).([]any)
		it = r[0].(int64)
		if it == 0 {
			break
		}
		ps.do(t, "BF.LOADCHUNK", "copy", it, r[1])
	}
	want["copy"] = want["grown"]
	pWriteCuckoo(t, ps, want)
	time.Sleep(5 * time.Millisecond) // "expired" expires
	return want
}

// pWriteCuckoo adds cuckoo filters to pWriteMix's keys (named "cf:…",
// so that the checks use the CF.* commands): grown ones, deletes of
// duplicates and compaction, a full non-growing one, a LOADCHUNK copy, a
// TTL and a rename.
func pWriteCuckoo(t testing.TB, ps *pServer, want map[string][]any) {
	t.Helper()
	ps.do(t, "CF.RESERVE", "cf:grown", "64", "BUCKETSIZE", "2", "EXPANSION", "2", "MAXITERATIONS", "5")
	its := pItems("cg", 1500) // several sub-filters
	ps.do(t, append([]any{"CF.INSERT", "cf:grown", "ITEMS"}, its...)...)
	ps.do(t, "CF.ADD", "cf:grown", "dup")
	ps.do(t, "CF.ADD", "cf:grown", "dup")
	ps.do(t, "CF.DEL", "cf:grown", "dup")
	for _, it := range its[:200] { // past 10% of the items: compacts
		ps.do(t, "CF.DEL", "cf:grown", it)
	}
	want["cf:grown"] = append(its[200:], "dup")
	ps.do(t, append([]any{"CF.INSERTNX", "cf:nx", "CAPACITY", "500", "ITEMS"}, pItems("nx", 100)...)...)
	ps.do(t, "CF.ADDNX", "cf:nx", "nx-1")
	want["cf:nx"] = pItems("nx", 100)
	ps.do(t, "CF.RESERVE", "cf:full", "8", "EXPANSION", "0")
	ps.do(t, append([]any{"CF.INSERT", "cf:full", "ITEMS"}, pItems("f", 30)...)...) // some -1
	want["cf:full"] = nil
	ps.do(t, "CF.RESERVE", "cf:compact", "4", "BUCKETSIZE", "1")
	ps.do(t, append([]any{"CF.INSERT", "cf:compact", "ITEMS"}, pItems("cc", 40)...)...)
	ps.do(t, "CF.DEL", "cf:compact", "cc-0")
	ps.do(t, "CF.COMPACT", "cf:compact")
	want["cf:compact"] = pItems("cc", 40)[1:]
	ps.do(t, "CF.ADD", "cf:ttl", "x")
	ps.do(t, "PEXPIRE", "cf:ttl", "3600000")
	want["cf:ttl"] = []any{"x"}
	ps.do(t, "CF.ADD", "cf:old", "y")
	ps.do(t, "RENAME", "cf:old", "cf:new")
	want["cf:new"] = []any{"y"}
	for it := int64(0); ; {
		r := ps.do(t, "CF.SCANDUMP", "cf:grown", it).([]any)
		if it = r[0].(int64); it == 0 {
			break
		}
		ps.do(t, "CF.LOADCHUNK", "cf:copy", it, r[1])
	}
	want["cf:copy"] = want["cf:grown"]
}

func TestPersistRestartAfterShutdown(t *testing.T) {
	dir := t.TempDir()
	for _, policy := range []string{"always", "everysec", "no"} {
		t.Run(policy, func(t *testing.T) {
			dir := filepath.Join(dir, policy)
			ps := startPServer(t, Config{Dir: dir, AppendFsync: policy})
			want := pWriteMix(t, ps)
			before := ps.state(t)
			if len(before) != len(want) {
				t.Fatalf("keys %v, want those of %v", before, want)
			}
			ps.shutdown(t)
			if got := dirNames(t, dir); !slices.Equal(got, []string{"LOCK", "appendonly.2.aof", "snapshot.2.bdb"}) {
				t.Errorf("files after shutdown: %v", got)
			}
			ps2 := startPServer(t, Config{Dir: dir, AppendFsync: policy})
			assertSameState(t, before, ps2, want)
			if ttl := ps2.do(t, "PTTL", "ttl").(int64); ttl <= 0 || ttl > 3600000 {
				t.Errorf("PTTL ttl = %d after restart", ttl)
			}
			ps2.shutdown(t)
			ps3 := startPServer(t, Config{Dir: dir, AppendFsync: policy}) // from the second snapshot
			assertSameState(t, before, ps3, want)
		})
	}
}

func TestPersistReplayWithoutShutdown(t *testing.T) {
	for _, policy := range []string{"always", "everysec", "no"} {
		t.Run(policy, func(t *testing.T) {
			ps := startPServer(t, Config{Dir: t.TempDir(), AppendFsync: policy})
			want := pWriteMix(t, ps)
			before := ps.state(t)
			crash := copyDataDir(t, ps.dir) // every reply came after waitDurable
			if got := dirNames(t, crash); !slices.Equal(got, []string{"LOCK", "appendonly.1.aof"}) {
				t.Errorf("files: %v", got)
			}
			ps2 := startPServer(t, Config{Dir: crash, AppendFsync: policy})
			assertSameState(t, before, ps2, want)
			if !strings.Contains(ps2.logs.String(), "records_replayed=") {
				t.Errorf("no replay logged:\n%s", ps2.logs)
			}
		})
	}
}

// A key with a TTL that passes before the restart, made persistent
// before it passed, must survive the replay: the log's past is replayed
// with the clock stopped.
func TestPersistReplayDoesNotExpire(t *testing.T) {
	ps := startPServer(t, Config{Dir: t.TempDir()})
	ps.do(t, "BF.ADD", "k", "item")
	ps.do(t, "BF.ADD", "short", "item")
	at := time.Now().Add(time.Second)
	ps.do(t, "PEXPIREAT", "k", at.UnixMilli())
	ps.do(t, "PEXPIREAT", "short", at.UnixMilli())
	if got := ps.do(t, "PERSIST", "k"); got != int64(1) {
		t.Fatalf("PERSIST k = %v: the machine is too slow for this test", got)
	}
	crash := copyDataDir(t, ps.dir)
	time.Sleep(time.Until(at) + 100*time.Millisecond)
	ps2 := startPServer(t, Config{Dir: crash})
	if got := ps2.do(t, "BF.EXISTS", "k", "item"); got != int64(1) {
		t.Fatalf("k lost in replay: BF.EXISTS = %v", got)
	}
	if got := ps2.do(t, "PTTL", "k"); got != int64(-1) {
		t.Errorf("PTTL k = %v, want -1", got)
	}
	if got := ps2.do(t, "EXISTS", "short"); got != int64(0) {
		t.Errorf("short should have expired: EXISTS = %v", got)
	}
}

func TestPersistSaveThenWrites(t *testing.T) {
	ps := startPServer(t, Config{Dir: t.TempDir(), AppendFsync: "always"})
	ps.do(t, append([]any{"BF.MADD", "a"}, pItems("a", 500)...)...)
	if got := ps.do(t, "SAVE"); got != "OK" {
		t.Fatalf("SAVE = %v", got)
	}
	if got := dirNames(t, ps.dir); !slices.Equal(got, []string{"LOCK", "appendonly.2.aof", "snapshot.2.bdb"}) {
		t.Errorf("files after SAVE: %v", got)
	}
	inf := ps.info(t)
	if inf["snapshot_generation"] != "2" || inf["rdb_changes_since_last_save"] != "0" || inf["rdb_last_bgsave_ok"] != "1" {
		t.Errorf("INFO after SAVE: %v", inf)
	}
	if last := ps.do(t, "LASTSAVE").(int64); time.Since(time.Unix(last, 0)) > time.Minute {
		t.Errorf("LASTSAVE = %d", last)
	}
	ps.do(t, append([]any{"BF.MADD", "a"}, pItems("a2", 500)...)...)
	ps.do(t, append([]any{"BF.MADD", "b"}, pItems("b", 100)...)...)
	ps.do(t, "DEL", "b")
	before := ps.state(t)
	want := map[string][]any{"a": append(pItems("a", 500), pItems("a2", 500)...)}

	crash := copyDataDir(t, ps.dir)
	ps2 := startPServer(t, Config{Dir: crash})
	assertSameState(t, before, ps2, want)

	ps.shutdown(t)
	ps3 := startPServer(t, Config{Dir: ps.dir})
	assertSameState(t, before, ps3, want)
}

// BGSAVE while clients write: every acknowledged item survives a restart
// from the snapshot and the log after it, with the same counts.
func TestPersistBGSaveUnderLoad(t *testing.T) {
	ps := startPServer(t, Config{Dir: t.TempDir(), AppendFsync: "everysec"})
	ctx := context.Background()
	const writers = 4
	acked := make([][]any, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		key := fmt.Sprintf("k%d", w%2)
		untilStop(&wg, stop, func(i int) bool {
			its := pItems(fmt.Sprintf("w%d-%d", w, i), 20)
			if err := ps.rdb.Do(ctx, append([]any{"BF.MADD", key}, its...)...).Err(); err != nil {
				t.Errorf("MADD: %v", err)
				return false
			}
			acked[w] = append(acked[w], its...)
			return true
		})
	}
	for range 3 {
		time.Sleep(50 * time.Millisecond)
		last := ps.info(t)["rdb_saves"]
		if got, err := ps.rdb.Do(ctx, "BGSAVE").Result(); err != nil || got != "Background saving started" {
			t.Fatalf("BGSAVE = %v, %v", got, err)
		}
		for inf := ps.info(t); inf["rdb_saves"] == last || inf["rdb_bgsave_in_progress"] != "0"; inf = ps.info(t) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	crash := copyDataDir(t, ps.dir) // snapshot 4 and the log after it, while writes go on
	close(stop)
	wg.Wait()
	before := ps.state(t)
	ps.shutdown(t)

	// The crash image holds the snapshot and a log that is a prefix of
	// what followed: every item acknowledged before the copy is there.
	if got := dirNames(t, crash); !slices.Contains(got, "snapshot.4.bdb") || !slices.Contains(got, "appendonly.4.aof") {
		t.Fatalf("crash image: %v", got)
	}
	ps2 := startPServer(t, Config{Dir: ps.dir})
	assertSameState(t, before, ps2, nil)
	for w, its := range acked {
		ps2.assertPresent(t, fmt.Sprintf("k%d", w%2), its)
	}
	ps3 := startPServer(t, Config{Dir: crash})
	if n := len(ps3.state(t)); n != 2 {
		t.Errorf("crash image has %d keys", n)
	}
}

func TestPersistAutoRewrite(t *testing.T) {
	ps := startPServer(t, Config{Dir: t.TempDir(), AOFRewriteMinSize: 4 << 10, AOFRewritePercent: 50})
	want := map[string][]any{}
	for i := range 40 {
		its := pItems(fmt.Sprintf("batch%d", i), 20)
		ps.do(t, append([]any{"BF.MADD", "k"}, its...)...)
		want["k"] = append(want["k"], its...)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ps.info(t)["snapshot_generation"] == "0" || ps.info(t)["aof_rewrite_in_progress"] == "1" {
		if time.Now().After(deadline) {
			t.Fatalf("no automatic snapshot: %v", ps.info(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
	inf := ps.info(t)
	gen := inf["snapshot_generation"]
	if got := dirNames(t, ps.dir); !slices.Equal(got, []string{"LOCK", "appendonly." + gen + ".aof", "snapshot." + gen + ".bdb"}) {
		t.Errorf("files after the automatic snapshot %s: %v (old ones must be deleted)", gen, got)
	}
	if !strings.Contains(ps.logs.String(), "automatic snapshot") {
		t.Errorf("not logged:\n%s", ps.logs)
	}
	before := ps.state(t)
	crash := copyDataDir(t, ps.dir)
	ps2 := startPServer(t, Config{Dir: crash})
	assertSameState(t, before, ps2, want)
}

func TestPersistSecondServerSameDir(t *testing.T) {
	dir := t.TempDir()
	ps := startPServer(t, Config{Dir: dir})
	ps.do(t, "BF.ADD", "k", "x")
	if _, err := newPServer(t, Config{Dir: dir}); err == nil || !strings.Contains(err.Error(), "in use by another bloomery server") {
		t.Fatalf("second server on %s: %v", dir, err)
	}
	ps.do(t, "BF.ADD", "k", "y") // the first is unharmed
	ps.shutdown(t)
	ps2 := startPServer(t, Config{Dir: dir}) // the lock is released
	ps2.assertPresent(t, "k", []any{"x", "y"})
}

func TestPersistLogGaps(t *testing.T) {
	for _, tc := range []struct {
		files []string
		want  string
	}{
		{[]string{"appendonly.1.aof", "appendonly.3.aof"}, "appendonly.3.aof is there but appendonly.2.aof"},
		{[]string{"appendonly.2.aof"}, "appendonly.2.aof is there but a snapshot"},
		{[]string{"snapshot.2.bdb", "appendonly.3.aof"}, "appendonly.3.aof is there but appendonly.2.aof"},
	} {
		dir := t.TempDir()
		for _, f := range tc.files {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := newPServer(t, Config{Dir: dir})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.files, err, tc.want)
		}
	}
}

// Leftover temporary files (a snapshot a crash interrupted) are deleted;
// a snapshot alone (its log lost) still loads, with a warning.
func TestPersistLeftovers(t *testing.T) {
	ps := startPServer(t, Config{Dir: t.TempDir()})
	ps.do(t, "BF.MADD", "k", "a", "b")
	ps.do(t, "SAVE")
	ps.shutdown(t)
	if err := os.WriteFile(filepath.Join(ps.dir, "snapshot.4.bdb.tmp"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ps.dir, "appendonly.3.aof")); err != nil {
		t.Fatal(err)
	}
	ps2 := startPServer(t, Config{Dir: ps.dir})
	ps2.assertPresent(t, "k", []any{"a", "b"})
	if !strings.Contains(ps2.logs.String(), "no log after the snapshot") {
		t.Errorf("no warning:\n%s", ps2.logs)
	}
	if got := dirNames(t, ps.dir); !slices.Equal(got, []string{"LOCK", "appendonly.3.aof", "snapshot.3.bdb"}) {
		t.Errorf("files: %v", got)
	}
}

// After close, appending and waiting fail without panicking.
func TestPersistAfterClose(t *testing.T) {
	cfg, _ := Config{Dir: t.TempDir()}.withDefaults()
	m, p, err := loadMemory(cfg, testCommands(), slog.New(slog.DiscardHandler), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	m.Reserve(context.Background(), "k", defaultCreate)
	if err := p.waitDurable(); err != nil {
		t.Fatal(err)
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	m.Reserve(context.Background(), "k2", defaultCreate)
	if err := p.waitDurable(); err == nil {
		t.Error("waitDurable after close: no error")
	}
	if err := p.bgsave(); err == nil {
		t.Error("bgsave after close: no error")
	}
	if err := p.close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	_ = p.info()
}

// A snapshot that a crash interrupted leaves its temporary file; the next
// start deletes it (and the old-style *.tmp too) and loads the rest.
func TestPersistRemovesLeftoverTempFiles(t *testing.T) {
	dir := t.TempDir()
	ps := startPServer(t, Config{Dir: dir})
	ps.do(t, "BF.ADD", "k", "a")
	ps.shutdown(t)
	for _, name := range []string{".snapshot.3.bdb.tmp-abc123", "snapshot.3.bdb.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("half a snapshot"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	again := startPServer(t, Config{Dir: dir})
	again.assertPresent(t, "k", []any{"a"})
	for _, name := range dirNames(t, dir) {
		if strings.Contains(name, ".tmp") {
			t.Fatalf("leftover %s not removed", name)
		}
	}
}
