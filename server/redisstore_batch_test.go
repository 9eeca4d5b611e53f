package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
)

// Tests of the Redis backend's coalescing (redisstore_batch.go).

// TestLanesCoalesceWhileInFlight: a command on an idle lane runs at once,
// alone; the commands that arrive while it is in flight run as one batch
// after it, in arrival order, bounded by batchItems; each is answered,
// and the lane is gone once idle.
func TestLanesCoalesceWhileInFlight(t *testing.T) {
	ls := newLanes()
	id := laneID{"k", laneAdd}
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int // the first item of each command, per batch
	exec := func(batch []*batchOp) {
		mu.Lock()
		first := len(batches) == 0
		var b []int
		for _, o := range batch {
			o.n = len(o.items) // the answer: each command's own count
			b = append(b, int(o.items[0][0]))
		}
		batches = append(batches, b)
		mu.Unlock()
		if first {
			<-release
		}
	}
	cmd := func(i, items int) *batchOp {
		o := ls.op()
		o.items = make([][]byte, items)
		for j := range o.items {
			o.items[j] = []byte{byte(i)}
		}
		return o
	}
	var wg sync.WaitGroup
	check := func(o *batchOp, items int) {
		defer wg.Done()
		ls.run(id, o, exec)
		if o.n != items {
			t.Errorf("command %d: answered %d, want %d", o.items[0][0], o.n, items)
		}
	}
	wg.Add(1)
	go check(cmd(0, 1), 1)
	waitFor(t, "the first command in flight", func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 })
	// Three commands of 400 items each, then one of 2000 (larger than a
	// batch), queue behind the one in flight, in this order.
	sizes := []int{400, 400, 400, 2000, 1}
	for i, n := range sizes {
		wg.Add(1)
		go check(cmd(i+1, n), n)
		waitFor(t, "the command queued", func() bool { ls.mu.Lock(); defer ls.mu.Unlock(); return len(ls.busy[id].queue) == i+1 })
	}
	close(release)
	wg.Wait()
	want := "[[0] [1 2] [3] [4] [5]]" // 800 items; 400+2000 > batchItems; 2000 alone
	if got := fmt.Sprint(batches); got != want {
		t.Errorf("batches %s, want %s", got, want)
	}
	if len(ls.busy) != 0 {
		t.Errorf("%d lanes left busy", len(ls.busy))
	}
}

// TestCoalescedBatchesSameAsSerial: random batches of adds and tests on
// one key (repeats within and across commands, a scaling filter growing
// inside a batch, a non-scaling one filling up, a missing key with and
// without NOCREATE, a key of another type, the filter cached or not) give
// each command the reply the memory backend gives it run alone, in
// order.
func TestCoalescedBatchesSameAsSerial(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Start(t)
	srv, _ := startServer(t, Config{Backend: "redis://" + rd.Addr()})
	r := srv.backend.(*redisStore)
	mem := newMemstore(0, 0)
	if err := redisDirect(t, rd.Addr()).Set(ctx, "str", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []bloomStore{r, mem} {
		mustReserve(t, s, "ns", createOpts{rate: 0.01, capacity: 30, nonScaling: true})
		mustReserve(t, s, "grow", createOpts{rate: 0.01, capacity: 20, expansion: 2})
	}
	small := createOpts{rate: 0.05, capacity: 10, nonScaling: true}
	keys := []string{"ns", "grow", "auto", "nocreate", "small", "str"}
	rng := rand.New(rand.NewPCG(15, 1))
	for round := range 400 {
		key := keys[rng.IntN(len(keys))]
		batch := make([]*batchOp, 1+rng.IntN(6))
		for i := range batch {
			o := &batchOp{items: make([][]byte, 1+rng.IntN(6))}
			for j := range o.items {
				o.items[j] = []byte("x" + strconv.Itoa(rng.IntN(150)))
			}
			switch key {
			case "nocreate":
				if rng.IntN(8) == 0 {
					o.create = &defaultCreate
				}
			case "small":
				o.create = &small
			default:
				o.create = &defaultCreate
			}
			o.res, o.found = make([]addResult, len(o.items)), make([]bool, len(o.items))
			batch[i] = o
		}
		if rng.IntN(4) == 0 {
			r.cache.clear()
		}
		what := "add"
		if rng.IntN(3) == 0 {
			what = "exists"
			r.existsBatch(ctx, key, batch)
		} else {
			r.addBatch(ctx, key, batch)
		}
		for i, o := range batch {
			got, want := redisAnswer(what, o), memAnswer(ctx, t, mem, what, key, o)
			if got != want {
				t.Fatalf("round %d, %s %q, command %d of %d %q:\ncoalesced %s\nalone     %s",
					round, what, key, i, len(batch), o.items, got, want)
			}
		}
	}
}

func mustReserve(t *testing.T, s bloomStore, key string, o createOpts) {
	t.Helper()
	if err := s.Reserve(context.Background(), key, o); err != nil {
		t.Fatal(err)
	}
}

// redisAnswer formats the answer a batch gave command o.
func redisAnswer(what string, o *batchOp) string {
	if what == "exists" {
		return answerString(o.found, o.err)
	}
	return answerString(o.res[:o.n], o.err)
}

// memAnswer runs command o alone on the memory backend (a key of another
// type, which it cannot hold, answers as RedisBloom does) and formats its
// answer.
func memAnswer(ctx context.Context, t *testing.T, mem *memstore, what, key string, o *batchOp) string {
	if what == "exists" {
		found := make([]bool, len(o.items))
		err := mem.Exists(ctx, key, o.items, found)
		return answerString(found, err)
	}
	if key == "str" {
		return answerString([]addResult{}, errWrongType)
	}
	res := make([]addResult, len(o.items))
	n, err := mem.Add(ctx, key, o.items, o.create, res)
	return answerString(res[:n], err)
}

// answerString is a command's answer: its results (found, or an add's
// processed ones), and its error, marked when it is an item's.
func answerString(res any, err error) string {
	s := fmt.Sprint(res)
	if err != nil {
		var ie itemError
		s += fmt.Sprintf(" error %q item %v", wireError(err), errors.As(err, &ie))
	}
	return s
}

// TestCoalescingConcurrentClients: many clients pipelining adds and tests
// at once, on keys of their own and on one they share, get the replies a
// serial run gives: a client's BF.EXISTS after its BF.ADD finds the item,
// every item shared by all is new to exactly one of them, and the shared
// filter counts each once.
func TestCoalescingConcurrentClients(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Start(t)
	srv, addr := startServer(t, Config{Backend: "redis://" + rd.Addr()})
	trips := countTrips(srv)
	setup := newClient(t, addr, 2)
	const clients, rounds, shared = 8, 25, 300
	want(t, setup, cmd("OK", "BF.RESERVE", "shared", "0.0000001", "10000"))
	var wg sync.WaitGroup
	newTo := make([]int, shared) // how many clients each shared item was new to
	var mu sync.Mutex
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newClient(t, addr, 2)
			own := "own:" + strconv.Itoa(c)
			if err := cl.Do(ctx, "BF.RESERVE", own, "0.0000001", "1000").Err(); err != nil {
				t.Error(err)
				return
			}
			rng := rand.New(rand.NewPCG(uint64(c), 2))
			for i := range rounds {
				item := "i" + strconv.Itoa(i)
				picks := rng.Perm(shared)[:12]
				p := cl.Pipeline()
				add, exists := p.Do(ctx, "BF.ADD", own, item), p.Do(ctx, "BF.EXISTS", own, item)
				madd := p.Do(ctx, append([]any{"BF.MADD", "shared"}, sharedItems(picks)...)...)
				p.Do(ctx, "BF.MEXISTS", "shared", "y", "z")
				if _, err := p.Exec(ctx); err != nil {
					t.Error(err)
					return
				}
				if a, e := add.Val(), exists.Val(); a != int64(1) || e != int64(1) {
					t.Errorf("client %d: BF.ADD %s %s = %v, then BF.EXISTS = %v", c, own, item, a, e)
				}
				mu.Lock()
				for j, v := range madd.Val().([]any) {
					newTo[picks[j]] += int(v.(int64))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for c := range clients {
		rng := rand.New(rand.NewPCG(uint64(c), 2))
		for range rounds {
			for _, i := range rng.Perm(shared)[:12] {
				seen[i] = true
			}
		}
	}
	for i, n := range newTo {
		if want := map[bool]int{true: 1}[seen[i]]; n != want {
			t.Errorf("shared item s%d was new to %d clients, want %d", i, n, want)
		}
	}
	want(t, setup, cmd(strconv.Itoa(len(seen)), "BF.CARD", "shared"))
	got := trips.reset()
	t.Logf("round trips for %d commands: %v", clients*rounds*4, got)
}

func sharedItems(picks []int) []any {
	out := make([]any, len(picks))
	for i, p := range picks {
		out[i] = "s" + strconv.Itoa(p)
	}
	return out
}
