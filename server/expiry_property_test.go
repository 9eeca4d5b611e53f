package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestExpiryHistories replays random histories of filters that expire
// and are re-created (adds, reserves, expiries set, refreshed and
// removed, time passing, renames onto and from expired keys, deletions,
// LOADCHUNK copies, lazy and swept expiry, snapshots in the background),
// crashes at random points, restarts, and checks that every key is as
// the clients last saw it acknowledged: existence, expiry, BF.INFO,
// BF.CARD, every item added to it, and its exact bytes.
//
// It runs in process on a memstore with a clock of its own. A crash is
// an image of the data directory as the OS has it (every acknowledged
// change is written before its reply), taken with no snapshot half done;
// the restart loads the image with the same clock.
func TestExpiryHistories(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	histories, steps := 12, 150
	if testing.Short() {
		histories = 3
	}
	for h := range histories {
		w := newHistory(t, rand.New(rand.NewPCG(seed, uint64(h))))
		for range steps {
			w.step()
		}
		w.crash()
		w.close()
	}
}

// histKey is what a client last saw of a key.
type histKey struct {
	expireAt int64    // 0: none
	items    []string // every item added since the key was created
	card     uint64
	info     filterInfo
}

// history is one random history and its model.
type history struct {
	t      *testing.T
	rnd    *rand.Rand
	clock  *testClock
	dir    string
	policy string
	m      *memstore
	p      *persistence // m's
	model  map[string]*histKey
	trace  []string // the operations so far, for a failure's message
	next   int      // items are "i<next>"
	ctx    context.Context
}

var histKeys = []string{"k0", "k1", "k2", "k3", "k4"}

func newHistory(t *testing.T, rnd *rand.Rand) *history {
	w := &history{t: t, rnd: rnd, clock: &testClock{now: 1_700_000_000_000}, dir: t.TempDir(),
		policy: []string{"always", "everysec", "no"}[rnd.IntN(3)], model: map[string]*histKey{}, ctx: context.Background()}
	w.m = w.open(w.dir)
	return w
}

// open loads dir into a new memstore with persistence, as server.New.
func (w *history) open(dir string) *memstore {
	w.t.Helper()
	cfg := Config{Dir: dir, AppendFsync: w.policy, AOFRewriteMinSize: int64(w.rnd.IntN(2)) << 12}
	m, p, err := loadMemory(cfg, testCommands(), slog.New(slog.DiscardHandler), w.clock.time)
	if err != nil {
		w.fail("restart: %v", err)
	}
	w.p = p
	return m
}

func (w *history) close() {
	if err := w.p.close(); err != nil {
		w.fail("close: %v", err)
	}
}

func (w *history) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("%s\nhistory:\n%s", fmt.Sprintf(format, args...), strings.Join(w.trace, "\n"))
}

func (w *history) note(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf("%8d ", w.clock.ms()%100000)+fmt.Sprintf(format, args...))
}

// live returns the model of key if it exists now.
func (w *history) live(key string) *histKey {
	k := w.model[key]
	if k != nil && k.expireAt != 0 && k.expireAt <= w.clock.ms() {
		delete(w.model, key)
		return nil
	}
	return k
}

// ack makes the changes so far durable, as a connection does before it
// replies to a write.
func (w *history) ack() {
	if err := w.p.waitDurable(); err != nil {
		w.fail("waitDurable: %v", err)
	}
}

// seen records key's BF.INFO as a client would read it after a change.
func (w *history) seen(key string) {
	if k := w.live(key); k != nil {
		info, err := w.m.Info(w.ctx, key)
		if err != nil {
			w.fail("BF.INFO %s: %v", key, err)
		}
		k.info = info
	}
}

func (w *history) key() string { return histKeys[w.rnd.IntN(len(histKeys))] }

func (w *history) step() {
	switch op := w.rnd.IntN(100); {
	case op < 25:
		w.add()
	case op < 30:
		w.reserve()
	case op < 45:
		w.expire()
	case op < 50:
		w.persist()
	case op < 65:
		d := time.Duration(w.rnd.IntN(700)) * time.Millisecond
		w.clock.advance(d)
		w.note("wait %v", d)
	case op < 72:
		w.rename()
	case op < 76:
		w.del()
	case op < 82:
		w.loadChunk()
	case op < 88:
		key := w.key() // a read: deletes the key lazily if it expired
		found := make([]bool, 1)
		w.m.Exists(w.ctx, key, [][]byte{[]byte("x")}, found)
		w.note("BF.EXISTS %s", key)
	case op < 92:
		n := w.m.ks.sweep()
		w.note("sweep: %d expired", n)
	case op < 95:
		err := w.p.bgsave()
		w.note("BGSAVE: %v", err)
	default:
		w.crash()
	}
}

func (w *history) add() {
	key := w.key()
	items := make([][]byte, 1+w.rnd.IntN(3))
	for i := range items {
		w.next++
		items[i] = fmt.Appendf(nil, "i%d", w.next)
	}
	var create *createOpts
	switch w.rnd.IntN(4) {
	case 0: // BF.INSERT NOCREATE
	case 1:
		create = &createOpts{rate: 0.001, capacity: 4, expansion: 2} // grows within a few adds
	default:
		create = &defaultCreate
	}
	added := make([]addResult, len(items))
	n, err := w.m.Add(w.ctx, key, items, create, added)
	w.note("add %s %q create=%v: %d %v", key, items, create != nil, n, err)
	k := w.live(key)
	switch {
	case errors.Is(err, errNotFound) && create == nil && k == nil:
		return
	case err != nil || n != len(items):
		w.fail("add %s: %d, %v", key, n, err)
	}
	w.ack()
	if k == nil {
		k = &histKey{}
		w.model[key] = k
	}
	for i, it := range items {
		k.items = append(k.items, string(it))
		if added[i] == addNew {
			k.card++
		}
	}
	w.seen(key)
}

func (w *history) reserve() {
	key := w.key()
	err := w.m.Reserve(w.ctx, key, createOpts{rate: 0.01, capacity: uint64(1 + w.rnd.IntN(50)), expansion: 2})
	w.note("BF.RESERVE %s: %v", key, err)
	if (w.live(key) != nil) != errors.Is(err, errItemExists) || (err != nil && !errors.Is(err, errItemExists)) {
		w.fail("BF.RESERVE %s: %v", key, err)
	}
	if err == nil {
		w.ack()
		w.model[key] = &histKey{}
		w.seen(key)
	}
}

func (w *history) expire() {
	key := w.key()
	var at int64
	switch w.rnd.IntN(6) {
	case 0:
		at = w.clock.ms() - int64(w.rnd.IntN(100)) // in the past: deletes the key
	case 1:
		at = w.clock.ms() + 1000*int64(1+w.rnd.IntN(3)) // EXPIRE in seconds
	default:
		at = w.clock.ms() + 1 + int64(w.rnd.IntN(800)) // PEXPIRE
	}
	done, err := w.m.PExpireAt(w.ctx, key, at, expireAlways)
	w.note("PEXPIREAT %s %+d: %v %v", key, at-w.clock.ms(), done, err)
	k := w.live(key)
	if err != nil || done != (k != nil) {
		w.fail("PEXPIREAT %s: %v %v", key, done, err)
	}
	if done {
		w.ack()
		if at <= w.clock.ms() {
			delete(w.model, key)
		} else {
			k.expireAt = at
		}
	}
}

func (w *history) persist() {
	key := w.key()
	done, err := w.m.Persist(w.ctx, key)
	w.note("PERSIST %s: %v", key, done)
	k := w.live(key)
	if err != nil || done != (k != nil && k.expireAt != 0) {
		w.fail("PERSIST %s: %v %v", key, done, err)
	}
	if done {
		w.ack()
		k.expireAt = 0
	}
}

func (w *history) rename() {
	from, to := w.key(), w.key()
	err := w.m.Rename(w.ctx, from, to)
	w.note("RENAME %s %s: %v", from, to, err)
	k := w.live(from)
	if (k == nil) != errors.Is(err, errNoSuchKey) || (err != nil && !errors.Is(err, errNoSuchKey)) {
		w.fail("RENAME %s %s: %v", from, to, err)
	}
	if err == nil {
		w.ack()
		delete(w.model, from)
		w.model[to] = k
	}
}

func (w *history) del() {
	key := w.key()
	n, err := w.m.Delete(w.ctx, []string{key})
	w.note("DEL %s: %d", key, n)
	if err != nil || (n == 1) != (w.live(key) != nil) {
		w.fail("DEL %s: %d %v", key, n, err)
	}
	if n == 1 {
		w.ack()
		delete(w.model, key)
	}
}

// loadChunk copies a key with SCANDUMP and LOADCHUNK onto a key that
// does not exist (typically one that expired).
func (w *history) loadChunk() {
	src, dst := w.key(), w.key()
	k := w.live(src)
	if k == nil || w.live(dst) != nil {
		return
	}
	w.note("SCANDUMP %s | LOADCHUNK %s", src, dst)
	for it := int64(0); ; {
		next, chunk, err := w.m.ScanDump(w.ctx, src, it)
		if err != nil {
			w.fail("SCANDUMP %s %d: %v", src, it, err)
		}
		if next == 0 {
			break
		}
		if err := w.m.LoadChunk(w.ctx, dst, next, chunk); err != nil {
			w.fail("LOADCHUNK %s %d: %v", dst, next, err)
		}
		w.ack()
		it = next
	}
	w.model[dst] = &histKey{items: slices.Clone(k.items), card: k.card}
	w.seen(dst)
}

// crash takes an image of the data directory, restarts on it, checks
// every key, and goes on with the restarted store.
func (w *history) crash() {
	p := w.p
	p.snapMu.Lock() // no snapshot half done: the image is a state a kill -9 can leave
	image := copyDataDir(w.t, w.dir)
	p.snapMu.Unlock()
	before := w.m
	w.note("crash")
	w.m = w.open(image)
	w.dir = image
	w.check(before)
	if err := p.close(); err != nil {
		w.fail("closing the crashed store: %v", err)
	}
}

// check compares the restarted store with the model and, for the bytes,
// with the store as it was before the crash.
func (w *history) check(before *memstore) {
	w.t.Helper()
	for _, key := range histKeys {
		k := w.live(key)
		at, err := w.m.ExpireTime(w.ctx, key)
		switch {
		case err != nil:
			w.fail("after restart, PEXPIRETIME %s: %v", key, err)
		case k == nil && at != -2:
			w.fail("after restart, %s exists (PEXPIRETIME %d); the clients saw it gone", key, at)
		case k == nil:
			continue
		case at == -2:
			w.fail("after restart, %s is gone; the clients saw it", key)
		case at != cmp.Or(k.expireAt, -1):
			w.fail("after restart, %s expires at %d, want %d", key, at, cmp.Or(k.expireAt, -1))
		}
		info, _ := w.m.Info(w.ctx, key)
		card, _ := w.m.Card(w.ctx, key)
		if info != k.info || card != k.card {
			w.fail("after restart, %s: BF.INFO %+v BF.CARD %d, the clients saw %+v and %d", key, info, card, k.info, k.card)
		}
		items := make([][]byte, len(k.items))
		for i, it := range k.items {
			items[i] = []byte(it)
		}
		found := make([]bool, len(items))
		w.m.Exists(w.ctx, key, items, found)
		if i := slices.Index(found, false); i >= 0 {
			w.fail("after restart, %s lost item %s", key, k.items[i])
		}
		if a, b := filterBytes(before, key), filterBytes(w.m, key); a != b {
			w.fail("after restart, %s's filter differs from before the crash", key)
		}
	}
}

// filterBytes is key's filter encoded, or "" when missing.
func filterBytes(m *memstore, key string) string {
	defer m.ks.lock(key)()
	e := m.ks.get(key)
	if e == nil {
		return ""
	}
	b, _ := e.filter.MarshalBinary()
	return string(b)
}
