package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/cuckoo"
)

// bareStore is a memstore loaded from dir's snapshot gen alone (and the
// logs given), to compare with the state a snapshot was cut from.
func bareStore(t *testing.T, dir string, gen uint64, logs ...uint64) *memstore {
	t.Helper()
	m := newLoadingMemstore(0)
	r := newReplayer(m, testCommands())
	p := &persistence{ks: m.ks, dir: dir, log: slog.New(slog.DiscardHandler)}
	if _, err := p.loadSnapshot(gen, r); err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if _, err := p.replayLog(filepath.Join(dir, logName(l)), true, r); err != nil {
			t.Fatal(err)
		}
	}
	m.serve(0, bloom.Blocked, time.Now)
	return m
}

func mustAdd(t testing.TB, m *memstore, key string, its ...string) {
	t.Helper()
	b := make([][]byte, len(its))
	for i, s := range its {
		b[i] = []byte(s)
	}
	if _, err := m.Add(context.Background(), key, b, &defaultCreate, make([]addResult, len(b))); err != nil {
		t.Fatal(err)
	}
}

// mustAddCuckoo adds items to key's cuckoo filter, made with the
// defaults when missing.
func mustAddCuckoo(t testing.TB, m *memstore, key string, its ...string) {
	t.Helper()
	b := make([][]byte, len(its))
	for i, s := range its {
		b[i] = []byte(s)
	}
	a := cuckooAdd{create: &defaultCuckoo}
	if err := (memCuckoo{m}).Add(context.Background(), key, b, a, make([]cuckoo.Status, len(b))); err != nil {
		t.Fatal(err)
	}
}

func nItems(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(prefix, i)
	}
	return out
}

// The snapshot is the keyspace at the cut, whatever happens after it:
// changes in place (the hook's copies), a rename then a change under the
// new name (another shard), deletes, LOADCHUNK, expiry changes, a flush;
// and the snapshot plus the log after it is the state at the end.
func TestSnapshotIsTheCut(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, p := openTestPersistence(t, dir, "everysec")
	defer p.close()
	for _, k := range []string{"grow", "moved", "deleted", "loaded", "ttl"} {
		mustAdd(t, m, k, nItems(k, 150)...) // past capacity: two sub-filters
	}
	m.PExpireAt(ctx, "ttl", time.Now().Add(time.Hour).UnixMilli(), expireAlways)
	cf := memCuckoo{m}
	for _, k := range []string{"cf-changed", "cf-deleted", "cf-kept"} {
		mustAddCuckoo(t, m, k, nItems(k, 3000)...) // several sub-filters
	}
	// Larger than smallSnapFilter: written through a copy-on-write view,
	// which the hook opens (changed) or the writer does (kept).
	for _, k := range []string{"cf-big-changed", "cf-big-kept"} {
		o := defaultCuckoo
		o.capacity = 1 << 17 // 128 KiB
		if err := cf.Reserve(ctx, k, o); err != nil {
			t.Fatal(err)
		}
		mustAddCuckoo(t, m, k, nItems(k, 20_000)...)
	}
	atCut := storeState(m)

	c, _, err := p.takeCut(false)
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, m, "grow", nItems("more", 300)...) // grows a third sub-filter
	if err := m.Rename(ctx, "moved", "moved-to"); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, m, "moved-to", nItems("after-rename", 50)...)
	m.Delete(ctx, []string{"deleted"})
	_, chunk, _ := m.ScanDump(ctx, "grow", 1)
	if err := m.LoadChunk(ctx, "loaded", 1+int64(len(chunk)), chunk); err != nil { // its first sub-filter's bits
		t.Fatal(err)
	}
	m.Persist(ctx, "ttl")
	mustAdd(t, m, "new", "x")
	mustAddCuckoo(t, m, "cf-changed", nItems("more", 3000)...) // copied by the hook, then grown
	for _, it := range nItems("cf-changed", 1000) {
		if _, err := cf.Delete(ctx, "cf-changed", []byte(it)); err != nil {
			t.Fatal(err)
		}
	}
	cf.Compact(ctx, "cf-changed")
	m.Delete(ctx, []string{"cf-deleted"})
	mustAddCuckoo(t, m, "cf-big-changed", nItems("more", 100_000)...) // copies pages, then grows
	for _, it := range nItems("cf-big-changed", 5000) {
		if _, err := cf.Delete(ctx, "cf-big-changed", []byte(it)); err != nil {
			t.Fatal(err)
		}
	}
	writeAndCheckCut(t, dir, m, p, c, atCut)
	m.Flush(ctx)
	if err := p.save(); err != nil {
		t.Fatal(err)
	}
	if got := storeState(bareStore(t, dir, c.gen+1)); got != "" {
		t.Fatalf("snapshot after FLUSHALL holds %s", got)
	}
}

// writeAndCheckCut writes the snapshot of cut c and checks that it
// holds the state at the cut, and that it and the log after it hold the
// state now.
func writeAndCheckCut(t *testing.T, dir string, m *memstore, p *persistence, c *snapCut, atCut string) {
	t.Helper()
	if _, _, err := p.writeSnapshot(c); err != nil {
		t.Fatal(err)
	}
	p.endCut()
	if got := storeState(bareStore(t, dir, c.gen)); got != atCut {
		t.Fatalf("snapshot:\n%.2000s\nstate at the cut:\n%.2000s", got, atCut)
	}
	if err := p.waitDurable(); err != nil {
		t.Fatal(err)
	}
	if got, want := storeState(bareStore(t, dir, c.gen, c.gen)), storeState(m); got != want {
		t.Fatalf("snapshot + log:\n%.2000s\nstate now:\n%.2000s", got, want)
	}
}

// The cut holds every key's position until the snapshot is written:
// deletions that would compact a shard (renumbering its positions) wait,
// so the hook still finds the keys that stayed, and keys made at freed
// positions, or renamed away, are told apart from the keys at the cut.
// The written cut holds no entry (deleted keys are freed as the writer
// passes them), and the shards compact when it ends.
func TestSnapshotCutHoldsPositions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, p := openTestPersistence(t, dir, "everysec")
	defer p.close()
	const n = 200 * keyShards
	keys := nItems("k", n)
	for _, k := range keys {
		mustAdd(t, m, k, k)
	}
	atCut := storeState(m)
	lens := func() (l [keyShards]int) {
		for i := range m.ks.shards {
			s := &m.ks.shards[i]
			s.Lock()
			l[i] = s.slots.len()
			s.Unlock()
		}
		return l
	}
	before := lens()
	c, _, err := p.takeCut(false)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for i, k := range keys {
		if i%8 == 0 {
			kept = append(kept, k)
		} else {
			m.Delete(ctx, []string{k})
		}
	}
	if lens() != before {
		t.Fatal("a shard was compacted during the snapshot")
	}
	for i, k := range kept {
		mustAdd(t, m, k, "after the cut")
		if i%5 == 0 {
			if err := m.Rename(ctx, k, k+"-moved"); err != nil {
				t.Fatal(err)
			}
			mustAdd(t, m, k+"-moved", "after the rename")
		}
	}
	mustAdd(t, m, "new", nItems("new", 10)...) // at a freed position
	writeAndCheckCut(t, dir, m, p, c, atCut)
	for i := range c.shards {
		for pos, sl := range c.shards[i].slots {
			if sl.e != nil {
				t.Fatalf("shard %d position %d: the written cut still holds %q", i, pos, sl.key)
			}
		}
	}
	if lens() == before {
		t.Fatal("the shards did not compact when the snapshot ended")
	}
}

// A snapshot that stops before some keys (a failed write) closes the
// views the hook opened on them, and no change opens one later: an open
// view would copy every page changed for as long as the filter lives.
func TestSnapshotDropClosesViews(t *testing.T) {
	ctx := context.Background()
	m, p := openTestPersistence(t, t.TempDir(), "everysec")
	defer p.close()
	cf := memCuckoo{m}
	o := defaultCuckoo
	o.capacity = 1 << 17
	for _, k := range []string{"changed", "later"} {
		if err := cf.Reserve(ctx, k, o); err != nil {
			t.Fatal(err)
		}
	}
	c, _, err := p.takeCut(false)
	if err != nil {
		t.Fatal(err)
	}
	mustAddCuckoo(t, m, "changed", "x") // the hook opens a view
	c.drop()
	mustAddCuckoo(t, m, "later", "y") // after the drop: no view
	p.endCut()
	for _, k := range []string{"changed", "later"} {
		mustAddCuckoo(t, m, k, "z") // lets go of a closed view
		f := m.ks.get(k).cuckoo()
		v, err := f.View()
		if err != nil {
			t.Fatalf("%s: a view is still open after the drop: %v", k, err)
		}
		v.Close()
	}
}

// Snapshots while goroutines add, rename and delete, in Bloom and cuckoo
// filters: with -race, the
// hook, the writer and the changes do not race, and each snapshot plus
// the log after it is the final state.
func TestSnapshotConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	m, p := openTestPersistence(t, dir, "no")
	defer p.close()
	ctx := context.Background()
	o := defaultCuckoo
	o.capacity = 1 << 17 // past smallSnapFilter: written through a view
	if err := (memCuckoo{m}).Reserve(ctx, "big", o); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	untilStop(&wg, stop, func(i int) bool { // the view's writer and these changes meet on the view's lock
		mustAddCuckoo(t, m, "big", fmt.Sprint("big-", i))
		if i%4 == 0 {
			(memCuckoo{m}).Delete(ctx, "big", []byte(fmt.Sprint("big-", i/2)))
		}
		return true
	})
	for w := range 4 {
		untilStop(&wg, stop, func(i int) bool {
			k := fmt.Sprintf("k%d", i%8)
			if i%2 == 1 { // every other key a cuckoo filter, with deletes
				k = "c" + k
				mustAddCuckoo(t, m, k, nItems(fmt.Sprintf("w%d-%d-", w, i), 5)...)
				(memCuckoo{m}).Delete(ctx, k, []byte(fmt.Sprintf("w%d-%d-0", w, i)))
			} else {
				mustAdd(t, m, k, nItems(fmt.Sprintf("w%d-%d-", w, i), 5)...)
			}
			switch i % 50 {
			case 17:
				m.Rename(ctx, k, fmt.Sprintf("r%d-%d", w, i))
			case 33:
				m.Delete(ctx, []string{k})
			}
			return true
		})
	}
	var last *snapCut
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		c, _, err := p.takeCut(false)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.writeSnapshot(c); err != nil {
			t.Fatal(err)
		}
		p.endCut()
		last = c
	}
	close(stop)
	wg.Wait()
	if err := p.waitDurable(); err != nil {
		t.Fatal(err)
	}
	if got, want := storeState(bareStore(t, dir, last.gen, last.gen)), storeState(m); got != want {
		t.Fatalf("snapshot + log:\n%s\nstate:\n%s", got, want)
	}
}

// A crash before the snapshot's rename leaves the old logs; one after it,
// before the old files are deleted, leaves both: each loads the same.
func TestSnapshotCrashPoints(t *testing.T) {
	dir := t.TempDir()
	m, p := openTestPersistence(t, dir, "always")
	defer p.close()
	mustAdd(t, m, "a", nItems("a", 100)...)
	c, _, err := p.takeCut(false)
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, m, "a", nItems("b", 100)...)
	mustAdd(t, m, "b", "x")
	if err := p.waitDurable(); err != nil {
		t.Fatal(err)
	}
	beforeRename := copyDataDir(t, dir)
	if _, _, err := p.writeSnapshot(c); err != nil {
		t.Fatal(err)
	}
	p.endCut()
	afterRename := copyDataDir(t, dir)
	want := storeState(m)
	for crash, files := range map[string]string{
		beforeRename: "LOCK appendonly.1.aof appendonly.2.aof",
		afterRename:  "LOCK appendonly.2.aof snapshot.2.bdb", // log 1 is obsolete
	} {
		m2, p2 := openTestPersistence(t, crash, "always")
		if got := storeState(m2); got != want {
			t.Errorf("%v: loaded\n%s\nwant\n%s", dirNames(t, crash), got, want)
		}
		if got := strings.Join(dirNames(t, crash), " "); got != files {
			t.Errorf("files after loading: %s, want %s", got, files)
		}
		p2.close()
	}
}

// snapshotImage is a directory holding one snapshot (generation 2) of a
// few keys, and its bytes.
func snapshotImage(t *testing.T) (string, []byte) {
	dir := t.TempDir()
	m, p := openTestPersistence(t, dir, "everysec")
	mustAdd(t, m, "k1", nItems("x", 10)...)
	mustAdd(t, m, "k2", "y")
	m.PExpireAt(context.Background(), "k2", time.Now().Add(time.Hour).UnixMilli(), expireAlways)
	mustAddCuckoo(t, m, "c", nItems("z", 5)...)
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, snapshotName(2)))
	if err != nil {
		t.Fatal(err)
	}
	return dir, b
}

// Every flipped byte and every truncation of a snapshot stops the start
// with an error naming the file.
func TestPersistCorruptSnapshot(t *testing.T) {
	image, snap := snapshotImage(t)
	name := snapshotName(2)
	try := func(what string, b []byte) {
		dir := copyDataDir(t, image)
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
		_, err := newPServer(t, Config{Dir: dir})
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)) || !strings.Contains(err.Error(), "restore the directory from a backup") {
			t.Fatalf("%s: %v", what, err)
		}
	}
	step := max(1, len(snap)/300)
	for pos := 0; pos < len(snap); pos++ {
		if pos > 200 && pos < len(snap)-40 && pos%step != 0 {
			continue
		}
		b := append([]byte(nil), snap...)
		b[pos] ^= 0x04
		try(fmt.Sprintf("byte %d flipped", pos), b)
		try(fmt.Sprintf("cut at %d", pos), snap[:pos])
	}
	try("a byte more", append(append([]byte(nil), snap...), 0))
}

func FuzzLoadSnapshot(f *testing.F) {
	dir := f.TempDir()
	m, p := openTestPersistence(f, dir, "everysec")
	mustAdd(f, m, "k", nItems("x", 200)...)
	mustAddCuckoo(f, m, "c", nItems("y", 50)...) // a 'C' record
	mustAdd(f, m, "s1", "a")                     // a shape and a state
	mustAdd(f, m, "s2", "b")
	p.close()
	snap, err := os.ReadFile(filepath.Join(dir, snapshotName(2)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(snap)
	f.Add(snap[:100])
	commands := testCommands()
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, snapshotName(1)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		m := newLoadingMemstore(1 << 20)
		p := &persistence{ks: m.ks, dir: dir, log: slog.New(slog.DiscardHandler)}
		if _, err := p.loadSnapshot(1, newReplayer(m, commands)); err != nil && !strings.Contains(err.Error(), snapshotName(1)) {
			t.Fatalf("error without the file's name: %v", err)
		}
		if used := m.used.Load(); used > uint64(len(data)) {
			t.Fatalf("a snapshot of %d bytes loaded %d bytes of filters", len(data), used)
		}
	})
}
