package redisfilter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/bloomery/bloom/cuckoo"
	"github.com/redis/go-redis/v9"
)

// checkCuckooConcurrent has 8 clients at once add their own items to
// one small filter (so it grows while they add) and delete about a third
// of them again (so it compacts): afterwards every item added and not
// deleted tests present, the item count is exactly the adds less the
// deletes, and the filter's bytes still answer as an in-memory filter
// loaded from them.
func checkCuckooConcurrent(t *testing.T, newClient func() redis.UniversalClient, name string) {
	ctx := context.Background()
	if _, err := CreateCuckoo(ctx, newClient(), name, 64); err != nil {
		t.Fatal(err)
	}
	const workers, per = 8, 400
	kept := make([][][]byte, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _ := CuckooAt(newClient(), name)
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			mine := items(fmt.Sprintf("w%d-", w), 0, per)
			for from := 0; from < per; from += 50 {
				batch := mine[from : from+50]
				st, err := c.AddMany(ctx, batch)
				if err != nil {
					errs <- err
					return
				}
				for i, s := range st {
					if s != cuckoo.Inserted {
						errs <- fmt.Errorf("item %s: status %d", batch[i], s)
						return
					}
				}
				for _, it := range batch {
					if rng.IntN(3) != 0 {
						kept[w] = append(kept[w], it)
						continue
					}
					if ok, err := c.Delete(ctx, it); err != nil || !ok {
						errs <- fmt.Errorf("delete %s = %v, %v", it, ok, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c, _ := CuckooAt(newClient(), name)
	in, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for w := range workers {
		total += len(kept[w])
		found, err := c.TestMany(ctx, kept[w])
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range found {
			if !ok {
				t.Fatalf("false negative: %s", kept[w][i])
			}
		}
	}
	if in.Items != uint64(total) || in.Filters < 2 {
		t.Errorf("Info %+v: want %d items and growth", in, total)
	}
	m, err := c.Download(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for w := range workers {
		for _, it := range kept[w] {
			if !m.Test(it) {
				t.Fatalf("the downloaded filter misses %s", it)
			}
		}
	}
}

func TestCuckooConcurrentClients(t *testing.T) {
	srv, _ := newClient(t)
	checkCuckooConcurrent(t, func() redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { c.Close() })
		return c
	}, "shared")
}

// On a 3-master cluster: names with and without hash tags, every piece
// of a filter in its name's slot, the byte-for-byte match with the
// in-memory filter, clients at once, expiry and Drop.
func TestCuckooCluster(t *testing.T) {
	ctx := context.Background()
	cl, c := newCluster(t)
	for i, name := range []string{"plain", "user{42}seen", "a}b", "{", ""} {
		w := newTwin(t, c, name, 8, 2, 20, 1, WithShardBytes(64))
		rng := rand.New(rand.NewPCG(uint64(i), 9))
		its := items("c", 0, 120)
		for range 60 {
			w.step(rng, its)
		}
		w.sameBytes()
		keys := listCuckooKeys(t, c, w.r)
		if len(keys) < 3 {
			t.Errorf("%q: only %d keys: the pieces did not multiply", name, len(keys))
		}
		for _, k := range keys {
			if got, err := c.ClusterKeySlot(ctx, k).Result(); err != nil || got != int64(slot(name)) {
				t.Errorf("%q: key %q in slot %d, not %d (%v)", name, k, got, slot(name), err)
			}
		}
		if err := w.r.Drop(ctx); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if n, _ := c.Exists(ctx, k).Result(); n != 0 {
				t.Errorf("%q: key %q left after Drop", name, k)
			}
		}
	}
	checkCuckooConcurrent(t, func() redis.UniversalClient {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
		t.Cleanup(func() { cc.Close() })
		return cc
	}, "shared{x}")
}

// listCuckooKeys lists the keys of a filter: its metadata and its pieces.
func listCuckooKeys(t *testing.T, c redis.UniversalClient, f *Cuckoo) []string {
	t.Helper()
	ctx := context.Background()
	h, err := c.HGetAll(ctx, f.Name()).Result()
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{f.Name()}
	for p := 0; ; p++ {
		k := fmt.Sprintf("%s%d", h["prefix"], p)
		if n, err := c.Exists(ctx, k).Result(); err != nil || n == 0 {
			return keys
		}
		keys = append(keys, k)
	}
}
