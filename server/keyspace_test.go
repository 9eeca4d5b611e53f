package server

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/bloomery/bloom"
)

// sharedFilter is one small filter that the keyspace tests put behind
// many keys (the keyspace never looks inside).
var sharedFilter = sync.OnceValue(func() *bloom.Scalable {
	f, err := bloom.NewScalable(100, 0.01, bloom.WithRedisBloomSplit())
	if err != nil {
		panic(err)
	}
	return f
})

func newEntry(expireAt int64) *entry { return &entry{filter: sharedFilter(), expireAt: expireAt} }

// testClock is a keyspace clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now int64 // Unix ms
}

func (c *testClock) time() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.UnixMilli(c.now)
}

func (c *testClock) ms() int64 { return c.time().UnixMilli() }

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now += d.Milliseconds()
	c.mu.Unlock()
}

// setKey stores a new entry under key, taking the lock.
func setKey(ks *keyspace, key string, expireAt int64) *entry {
	defer ks.lock(key)()
	e := newEntry(expireAt)
	ks.set(key, e)
	return e
}

func getKey(ks *keyspace, key string) *entry {
	defer ks.lock(key)()
	return ks.get(key)
}

func TestKeyspaceExpiry(t *testing.T) {
	ks := newKeyspace(time.Now)
	clock := &testClock{now: 1_000_000}
	ks.now = clock.time
	var expired []string
	ks.expiring = func(key string) { expired = append(expired, key) }
	setKey(ks, "a", 0)
	setKey(ks, "b", clock.ms()+1000)
	setKey(ks, "c", clock.ms()+5000)
	clock.advance(1500 * time.Millisecond)
	if getKey(ks, "a") == nil || getKey(ks, "b") != nil {
		t.Fatal("a must live, b must have expired")
	}
	if got := ks.len(); got != 2 || fmt.Sprint(expired) != "[b]" {
		t.Fatalf("len %d, expiring told %v, after b expired on access", got, expired)
	}
	clock.advance(5 * time.Second)
	if _, keys := ks.scan(0, 100, func(string) bool { return true }); fmt.Sprint(keys) != "[a]" {
		t.Fatalf("scan returned %v; c has expired", keys)
	}
	if n := ks.sweep(); n != 1 || fmt.Sprint(expired) != "[b c]" {
		t.Fatalf("sweep removed %d, expiring told %v", n, expired)
	}
	if _, keys := ks.scan(0, 1<<20, func(string) bool { return true }); fmt.Sprint(keys) != "[a]" {
		t.Fatalf("keys %v", keys)
	}
	unlock := ks.lock("a")
	if !ks.del("a") || ks.del("a") {
		t.Fatal("del")
	}
	unlock()
	if ks.len() != 0 || ks.expires.Load() != 0 || ks.expired.Load() != 2 || len(expired) != 2 {
		t.Fatalf("len %d, expires %d, expired %d, told %v", ks.len(), ks.expires.Load(), ks.expired.Load(), expired)
	}
}

// checkKeyspace verifies the shards' invariants and that the keyspace
// holds exactly model (keys whose expiry has passed may or may not be
// there).
func checkKeyspace(t *testing.T, ks *keyspace, model map[string]*entry) {
	t.Helper()
	now := ks.now().UnixMilli()
	ttl := 0
	for i := range ks.shards {
		s := &ks.shards[i]
		live, withTTL := 0, 0
		for pos, sl := range s.slots.all {
			if sl.e == nil {
				continue
			}
			live++
			if sl.e.expireAt != 0 {
				withTTL++
			}
			if cell, p := s.index.find(sl.key, ks.hash(sl.key), &s.slots); cell < 0 || p != pos {
				t.Fatalf("key %q at %d: index finds %d", sl.key, pos, p)
			}
			if model[sl.key] != sl.e && (sl.e.expireAt == 0 || sl.e.expireAt > now) {
				t.Fatalf("key %q is in the keyspace, not in the model", sl.key)
			}
		}
		for _, f := range s.free {
			if s.slots.at(int(f)).e != nil {
				t.Fatalf("shard %d: free position %d is occupied", i, f)
			}
		}
		if live != s.live || live != s.index.n || withTTL != s.ttl || len(s.free) != s.slots.len()-live {
			t.Fatalf("shard %d: %d keys, live %d, index %d, ttl %d (counted %d), %d free of %d",
				i, live, s.live, s.index.n, s.ttl, withTTL, len(s.free), s.slots.len())
		}
		ttl += withTTL
	}
	if ks.expires.Load() != int64(ttl) {
		t.Fatalf("expires %d, counted %d", ks.expires.Load(), ttl)
	}
	for k, e := range model {
		if got := ks.peek(k); got != e && (e.expireAt == 0 || e.expireAt > now) {
			t.Fatalf("key %q: entry %p, want %p", k, got, e)
		}
	}
}

// TestKeyspaceModel runs random sets, deletions, renames, expiries,
// sweeps and flushes against a map, across growth and compaction.
func TestKeyspaceModel(t *testing.T) {
	ks := newKeyspace(time.Now)
	clock := &testClock{now: 1_000_000}
	ks.now = clock.time
	model := map[string]*entry{}
	rnd := rand.New(rand.NewPCG(1, 2))
	key := func() string { return fmt.Sprint("k", rnd.IntN(3000)) }
	expireModel := func() {
		for k, e := range model {
			if e.expireAt != 0 && e.expireAt <= clock.ms() {
				delete(model, k)
			}
		}
	}
	for step := range 60000 {
		// Phases of growth and of decline, so shards compact.
		grow := step/10000%2 == 0
		switch op := rnd.IntN(100); {
		case op < 45 && grow, op < 15:
			k := key()
			exp := int64(0)
			if rnd.IntN(4) == 0 {
				exp = clock.ms() + rnd.Int64N(2000)
			}
			model[k] = setKey(ks, k, exp)
		case op < 75:
			k := key()
			unlock := ks.lock(k)
			ks.del(k)
			unlock()
			delete(model, k)
		case op < 85:
			from, to := key(), key()
			unlock := ks.lock(from, to)
			ok := ks.rename(from, to)
			unlock()
			expireModel()
			if e := model[from]; (e != nil) != ok {
				t.Fatalf("rename %s %s: %v, model has %v", from, to, ok, e)
			} else if ok {
				delete(model, from)
				model[to] = e
			}
		case op < 95:
			k := key()
			unlock := ks.lock(k)
			if e := ks.get(k); e != nil {
				at := int64(0)
				if rnd.IntN(3) > 0 {
					at = clock.ms() + 1 + rnd.Int64N(2000)
				}
				ks.setExpire(k, e, at)
			}
			unlock()
		case op < 99:
			clock.advance(time.Duration(rnd.IntN(300)) * time.Millisecond)
			ks.sweep()
		default:
			if rnd.IntN(20) == 0 {
				unlock := ks.lockAll()
				old := ks.detach()
				unlock()
				ks.release(old)
				clear(model)
			}
		}
		expireModel()
		if step%1000 == 0 {
			checkKeyspace(t, ks, model)
		}
	}
	checkKeyspace(t, ks, model)
}

// TestKeyspaceSweepHeap: refreshing an expiry over and over keeps the
// heap bounded, and the sweep deletes exactly the keys whose time came.
func TestKeyspaceSweepHeap(t *testing.T) {
	ks := newKeyspace(time.Now)
	clock := &testClock{now: 1_000_000}
	ks.now = clock.time
	told := map[string]int{}
	ks.expiring = func(key string) { told[key]++ }
	const n = 5000
	for i := range n {
		setKey(ks, fmt.Sprint("k", i), clock.ms()+int64(1000+i%1000))
	}
	for range 50 { // every key's expiry refreshed 50 times
		for i := range n {
			k := fmt.Sprint("k", i)
			unlock := ks.lock(k)
			ks.setExpire(k, ks.get(k), clock.ms()+int64(1000+i%1000))
			unlock()
		}
		clock.advance(time.Millisecond)
	}
	heap := 0
	for i := range ks.shards {
		s := &ks.shards[i]
		heap += len(s.expiry)
		if len(s.expiry) > 2*s.ttl+64 {
			t.Fatalf("shard %d: %d heap items for %d keys with an expiry", i, len(s.expiry), s.ttl)
		}
	}
	clock.advance(1500 * time.Millisecond) // past the expiry of keys with i%1000 < 451
	deleted := 0
	for d := ks.sweep(); d > 0; d = ks.sweep() {
		deleted += d
	}
	want := 0
	for i := range n {
		if 1000+int64(i%1000)+49 <= 1500+50 {
			want++
		}
	}
	if deleted != want || len(told) != want || ks.len() != n-want {
		t.Fatalf("sweep deleted %d, told %d, %d left; want %d deleted", deleted, len(told), ks.len(), want)
	}
	for k, c := range told {
		if c != 1 {
			t.Fatalf("expiring told %d times of %s", c, k)
		}
	}
	t.Logf("%d heap items for %d keys", heap, n)
}

// fillKeyspace adds n keys prefix0 … with the shared filter.
func fillKeyspace(ks *keyspace, prefix string, n int) {
	for i := range n {
		setKey(ks, prefix+fmt.Sprint(i), 0)
	}
}

// TestKeyspaceScanBounded: on 10⁵ keys a SCAN call with COUNT 10 visits
// about 10 slots, whether MATCH matches or not; a full scan takes about
// keys/10 calls and returns each key once.
func TestKeyspaceScanBounded(t *testing.T) {
	ks := newKeyspace(time.Now)
	const n = 100_000
	fillKeyspace(ks, "key:", n)
	seen := map[string]int{}
	calls := 0
	for cursor := uint64(0); ; {
		tested := 0
		next, keys := ks.scan(cursor, 10, func(k string) bool {
			tested++
			return globMatch("nomatch*", k)
		})
		calls++
		if tested > 10 || len(keys) > 0 {
			t.Fatalf("SCAN %d MATCH nomatch* COUNT 10 tested %d keys and returned %d", cursor, tested, len(keys))
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if calls < n/10 {
		t.Fatalf("MATCH nomatch* COUNT 10 walked %d keys in %d calls", n, calls)
	}
	calls = 0
	for cursor := uint64(0); ; {
		next, keys := ks.scan(cursor, 10, func(string) bool { return true })
		calls++
		if len(keys) > 10 {
			t.Fatalf("COUNT 10 returned %d keys", len(keys))
		}
		for _, k := range keys {
			seen[k]++
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(seen) != n || calls > n/10+2*keyShards {
		t.Fatalf("full scan: %d distinct keys of %d in %d calls", len(seen), n, calls)
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("%s returned %d times with no change to the keyspace", k, c)
		}
	}
}

// TestKeyspaceScanConcurrent: keys present for the whole scan are all
// returned while other goroutines insert and delete keys, including
// enough deletions to compact shards in the middle of the scan.
func TestKeyspaceScanConcurrent(t *testing.T) {
	ks := newKeyspace(time.Now)
	const stable, churn = 5_000, 100_000
	fillKeyspace(ks, "stable:", stable)
	fillKeyspace(ks, "churn:", churn)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { // deletes every churn key: shards fall below a quarter full and compact
		for i := range churn {
			k := fmt.Sprint("churn:", i)
			unlock := ks.lock(k)
			ks.del(k)
			unlock()
			if i%64 == 0 {
				runtime.Gosched()
			}
		}
	})
	wg.Go(func() { // inserts and deletes other keys until the scan ends
		rnd := rand.New(rand.NewPCG(3, 7))
		for {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprint("new:", rnd.IntN(5_000))
			unlock := ks.lock(k)
			if rnd.IntN(3) == 0 {
				ks.del(k)
			} else {
				ks.set(k, newEntry(0))
			}
			unlock()
		}
	})
	seen := map[string]bool{}
	epochs := 0
	for i := range ks.shards {
		epochs -= int(ks.shards[i].epoch)
	}
	for cursor := uint64(0); ; {
		next, keys := ks.scan(cursor, 10, func(string) bool { return true })
		for _, k := range keys {
			seen[k] = true
		}
		runtime.Gosched()
		if cursor = next; cursor == 0 {
			break
		}
	}
	close(stop)
	wg.Wait()
	for i := range ks.shards {
		epochs += int(ks.shards[i].epoch)
	}
	for i := range stable {
		if k := fmt.Sprint("stable:", i); !seen[k] {
			t.Fatalf("%s, present for the whole scan, was not returned (%d compactions)", k, epochs)
		}
	}
	t.Logf("%d keys returned, %d compactions during the scan", len(seen), epochs)
}

// TestKeyspaceScanCompacted: a scan that stops in a shard that is then
// compacted restarts the shard and still returns every key there (the
// keys behind the cursor move in front of it).
func TestKeyspaceScanCompacted(t *testing.T) {
	ks := newKeyspace(time.Now)
	fillKeyspace(ks, "gone", 64*1000)
	fillKeyspace(ks, "k", 64*200) // behind the gone keys in every shard
	s := &ks.shards[0]
	var stay []string
	for _, sl := range s.slots.all {
		if sl.key[0] == 'k' {
			stay = append(stay, sl.key)
		}
	}
	// Stop in shard 0 halfway through its k keys.
	seen := map[string]bool{}
	cursor, stop := uint64(0), s.slots.len()-len(stay)/2
	for int(uint32(cursor)) < stop {
		var keys []string
		cursor, keys = ks.scan(cursor, 100, func(string) bool { return true })
		for _, k := range keys {
			seen[k] = true
		}
	}
	epoch := s.epoch
	for i := range 64 * 1000 {
		k := fmt.Sprint("gone", i)
		unlock := ks.lock(k)
		ks.del(k)
		unlock()
	}
	if s.epoch == epoch {
		t.Fatal("deleting most keys did not compact the shard")
	}
	for cursor != 0 {
		var keys []string
		cursor, keys = ks.scan(cursor, 100, func(string) bool { return true })
		for _, k := range keys {
			seen[k] = true
		}
	}
	for _, k := range stay {
		if !seen[k] {
			t.Fatalf("%s missed after its shard was compacted", k)
		}
	}
	if len(seen) < 64*200 {
		t.Fatalf("%d keys returned, want all %d", len(seen), 64*200)
	}
}

// TestKeyspaceLocks: many goroutines locking overlapping key sets never
// deadlock, and updates to a key's data under its lock are not lost (the
// race detector checks the exclusion).
func TestKeyspaceLocks(t *testing.T) {
	ks := newKeyspace(time.Now)
	const keys, goroutines, rounds = 17, 8, 2000
	var counts [keys]int // counts[i] is guarded by the lock of key i
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				a, b := (g+i)%keys, (g*7+i)%keys
				unlock := ks.lock(fmt.Sprint("k", b), fmt.Sprint("k", a))
				counts[a]++
				if a != b {
					counts[b]++
				}
				unlock()
			}
		})
	}
	wg.Wait()
	total, want := 0, 0
	for _, c := range counts {
		total += c
	}
	for g := range goroutines {
		for i := range rounds {
			want++
			if (g+i)%keys != (g*7+i)%keys {
				want++
			}
		}
	}
	if total != want {
		t.Fatalf("%d updates, want %d", total, want)
	}
}
