package redisfilter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// checkSameAnswers compares f.ExistsMany(probes) with want (the
// in-memory filter's Test), item by item.
func checkSameAnswers(t *testing.T, f interface {
	ExistsMany(context.Context, [][]byte) ([]bool, error)
}, want func([]byte) bool, probes [][]byte) {
	t.Helper()
	got, err := f.ExistsMany(context.Background(), probes)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(probes) {
		t.Fatalf("%d answers for %d items", len(got), len(probes))
	}
	for i, it := range probes {
		if got[i] != want(it) {
			t.Fatalf("ExistsMany[%d] (%q) = %v, in memory %v", i, it, got[i], !got[i])
		}
	}
}

// TestExistsBlockedBatches: the GETRANGE reads answer as the in-memory
// filter for batches that are empty, span shards, repeat blocks, exceed
// MaxBatch, and read blocks past the end of a shard's string (never
// written: zeros) or in shards that do not exist yet.
func TestExistsBlockedBatches(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	f := mustCreate(t, c, "blk", 50_000, 0.01, WithShardBytes(4096), WithRefresh(0))
	if n := len(f.Meta().Shards); n < 10 {
		t.Fatalf("%d shards", n)
	}
	mem, _ := bloom.NewSized(f.Sizing())
	got, err := f.ExistsMany(ctx, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty batch: %v, %v", got, err)
	}
	// One item: its shard's string ends at its block; the other shards do
	// not exist.
	one := []byte("only")
	if _, err := f.Add(ctx, one); err != nil {
		t.Fatal(err)
	}
	mem.Add(one)
	probes := items("p", 0, 3*MaxBatch+17)
	checkSameAnswers(t, f, mem.Test, append(probes, one))
	// Half full, with repeats (the same block several times in a batch).
	in := items("in", 0, 25_000)
	if _, err := f.AddMany(ctx, in); err != nil {
		t.Fatal(err)
	}
	for _, it := range in {
		mem.Add(it)
	}
	mixed := append(append(append([][]byte{}, in[:5000]...), probes[:5000]...), in[:100]...)
	checkSameAnswers(t, f, mem.Test, mixed)
	checkSameAnswers(t, f, mem.Test, append(probes, in...)) // several chunks of MaxBatch
	ok, err := f.Exists(ctx, in[7])
	if err != nil || !ok {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
}

// TestExistsBlockedCommands: a batch reads each block once, and blocks
// at most mergeGap bytes apart with one GETRANGE.
func TestExistsBlockedCommands(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	f := mustCreate(t, c, "big", 1_000_000, 0.01, WithRefresh(0))
	s := f.Sizing()
	blockOfItem := func(it []byte) uint64 { return s.Offsets(bloom.HashBytes(it), nil)[0] / bloom.BlockBits }
	// Items whose blocks are gap blocks after the first one's.
	first := []byte("first")
	at := func(gap uint64) []byte {
		for i := 0; ; i++ {
			it := []byte(fmt.Sprint("probe", i))
			if blockOfItem(it) == blockOfItem(first)+gap {
				return it
			}
		}
	}
	const near = mergeGap/64 + 1 // the farthest block one read still covers
	for _, tc := range []struct {
		name  string
		batch [][]byte
		want  int
	}{
		{"one item a thousand times", slices.Repeat([][]byte{first}, 1000), 1},
		{"the next block", [][]byte{first, at(1)}, 1},
		{"within the gap", [][]byte{at(near), first, first}, 1},
		{"beyond the gap", [][]byte{first, at(near + 1)}, 2},
		{"empty", nil, 0},
	} {
		before := commandCalls(t, c)["getrange"]
		if _, err := f.ExistsMany(ctx, tc.batch); err != nil {
			t.Fatal(err)
		}
		if got := commandCalls(t, c)["getrange"] - before; got != tc.want {
			t.Errorf("%s: %d GETRANGE, want %d", tc.name, got, tc.want)
		}
	}
}

// TestExistsBlockedWrongType: a shard key of another type is an error,
// not a panic or a silent "absent".
func TestExistsBlockedWrongType(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	f := mustCreate(t, c, "wt", 1000, 0.01, WithRefresh(0))
	c.RPush(ctx, f.Meta().Shards[0], "x")
	if _, err := f.ExistsMany(ctx, items("a", 0, 10)); err == nil {
		t.Fatal("ExistsMany over a list: no error")
	}
}

// TestConcurrentAddMany: goroutines adding overlapping batches to one
// filter at once lose no item, and each distinct item is reported new by
// exactly one of them (the filter is sized so that an add-time false
// positive, which would make it zero, is out of reach: 4% of its
// capacity at p = 1e-6).
func TestConcurrentAddMany(t *testing.T) {
	ctx := context.Background()
	srv, _ := newClient(t)
	// No retries and no read deadline: a pipeline re-sent after a reply
	// lost to a timeout (a loaded machine) would set the bits again and
	// answer "not new" for items it had added (the package doc's caveat).
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ReadTimeout: -1, WriteTimeout: -1})
	t.Cleanup(func() { c.Close() })
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"blocked", []Option{WithShardBytes(64 << 10)}},
		{"classic", []Option{WithLayout(bloom.Classic)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustCreate(t, c, "conc-"+tc.name, 500_000, 1e-6, append(tc.opts, WithRefresh(0))...)
			const goroutines, distinct, batch = 8, 20_000, 700
			all := items("c", 0, distinct)
			news := make([]int32, distinct)
			var mu sync.Mutex
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := range goroutines {
				wg.Go(func() {
					// Each goroutine adds every item, from its own start.
					for lo := 0; lo < distinct; lo += batch {
						from := (lo + g*distinct/goroutines) % distinct
						idx := make([]int, 0, batch)
						b := make([][]byte, 0, batch)
						for j := range min(batch, distinct-lo) {
							idx = append(idx, (from+j)%distinct)
							b = append(b, all[(from+j)%distinct])
						}
						r, err := f.AddMany(ctx, b)
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						for j, isNew := range r {
							if isNew {
								news[idx[j]]++
							}
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for i, n := range news {
				if n != 1 {
					t.Fatalf("item %d reported new %d times", i, n)
				}
			}
			ex, err := f.ExistsMany(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			if n := count(ex); n != distinct {
				t.Fatalf("%d of %d items present", n, distinct)
			}
			checkSameAnswers(t, f, sequentialCopy(t, f, all).Test, items("absent", 0, 20_000))
		})
	}
}

// sequentialCopy is an in-memory filter of f's geometry holding items.
func sequentialCopy(t *testing.T, f *Filter, in [][]byte) *bloom.Filter {
	t.Helper()
	mem, err := bloom.NewSized(f.Sizing())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range in {
		mem.Add(it)
	}
	return mem
}
