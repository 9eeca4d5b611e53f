package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
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
	cmd := func(i, items int) *waiter {
		w := ls.waiter(nil)
		w.one.items = make([][]byte, items)
		for j := range w.one.items {
			w.one.items[j] = []byte{byte(i)}
		}
		return w
	}
	var wg sync.WaitGroup
	check := func(w *waiter, items int) {
		defer wg.Done()
		ls.run(id, w, exec)
		if o := w.ops[0]; o.n != items {
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

// gatedLane is a lane of a depth the test sets, whose batches record the
// first item of each command and then wait until the test opens the
// gate of their first command's item (commands with no gate go on).
type gatedLane struct {
	t       *testing.T
	ls      *lanes
	id      laneID
	depth   atomic.Int32
	gates   map[byte]chan struct{}
	mu      sync.Mutex
	batches [][]int
	wg      sync.WaitGroup
}

func newGatedLane(t *testing.T, depth int32, gated ...byte) *gatedLane {
	g := &gatedLane{t: t, ls: newLanes(), id: laneID{"k", laneAdd}, gates: map[byte]chan struct{}{}}
	g.depth.Store(depth)
	g.ls.depth = func(laneID) int { return int(g.depth.Load()) }
	for _, i := range gated {
		g.gates[i] = make(chan struct{})
	}
	return g
}

func (g *gatedLane) exec(batch []*batchOp) {
	var b []int
	for _, o := range batch {
		o.n = len(o.items)
		b = append(b, int(o.items[0][0]))
	}
	g.mu.Lock()
	g.batches = append(g.batches, b)
	g.mu.Unlock()
	if gate := g.gates[batch[0].items[0][0]]; gate != nil {
		<-gate
	}
}

// send runs a command of n items i in the lane, on a goroutine of its own.
func (g *gatedLane) send(i byte, n int) {
	w := g.ls.waiter(nil)
	w.one.items = make([][]byte, n)
	for j := range w.one.items {
		w.one.items[j] = []byte{i}
	}
	g.wg.Go(func() {
		g.ls.run(g.id, w, g.exec)
		if w.ops[0].n != n {
			g.t.Errorf("command %d unanswered", i)
		}
	})
}

// led reports whether batches led by each of firsts have started.
func (g *gatedLane) led(firsts ...int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range firsts {
		if !slices.ContainsFunc(g.batches, func(b []int) bool { return b[0] == f }) {
			return false
		}
	}
	return true
}

func (g *gatedLane) inFlight() int {
	g.ls.mu.Lock()
	defer g.ls.mu.Unlock()
	return g.ls.busy[g.id].inflight
}

func (g *gatedLane) queued() int {
	g.ls.mu.Lock()
	defer g.ls.mu.Unlock()
	return len(g.ls.busy[g.id].queue)
}

// finish waits for every command and checks that the lane is idle.
func (g *gatedLane) finish() {
	g.wg.Wait()
	if len(g.ls.busy) != 0 {
		g.t.Errorf("%d lanes left busy", len(g.ls.busy))
	}
}

// TestLanesTwoInFlight: a lane of depth 2 leads a second command at once
// while one is in flight, queues the rest, and hands them to the first
// leader done; when its depth falls back to 1 with two leaders, the
// next one done retires and the other takes the queue. Every command is
// answered and the lane is gone once idle.
func TestLanesTwoInFlight(t *testing.T) {
	g := newGatedLane(t, 2, 0, 1, 2)
	g.send(0, 1)
	waitFor(t, "the first command in flight", func() bool { return g.led(0) })
	g.send(1, 1)
	waitFor(t, "a second command in flight beside it", func() bool { return g.led(1) })
	if n := g.inFlight(); n != 2 {
		t.Fatalf("%d batches in flight, want 2", n)
	}
	g.send(2, 1)
	waitFor(t, "the third command queued", func() bool { return g.queued() == 1 })
	close(g.gates[1]) // the second leader, done, takes the third
	waitFor(t, "the third command led", func() bool { return g.led(2) })
	g.send(3, 1)
	waitFor(t, "a command queued", func() bool { return g.queued() == 1 })
	g.send(4, 1)
	waitFor(t, "two commands queued", func() bool { return g.queued() == 2 })
	g.depth.Store(1) // the copy is gone: one leader must retire
	close(g.gates[0])
	waitFor(t, "the first leader retired", func() bool { return g.inFlight() == 1 })
	if n := g.queued(); n != 2 {
		t.Fatalf("%d commands left queued, want 2 (for the leader still in flight)", n)
	}
	close(g.gates[2])
	g.finish()
	if got, want := fmt.Sprint(g.batches), "[[0] [1] [2] [3 4]]"; got != want {
		t.Errorf("batches %s, want %s", got, want)
	}
}

// TestLanesExtraLeader: a leader done with more than one batch queued,
// in a lane whose depth allows another leader, takes its batch and hands
// the next to a new leader: both are in flight at once.
func TestLanesExtraLeader(t *testing.T) {
	g := newGatedLane(t, 1, 0, 1, 2)
	g.send(0, 1)
	waitFor(t, "the first command in flight", func() bool { return g.led(0) })
	g.send(1, 1000)
	waitFor(t, "a command queued", func() bool { return g.queued() == 1 })
	g.send(2, 1000) // 2000 items: two batches
	waitFor(t, "two commands queued", func() bool { return g.queued() == 2 })
	g.depth.Store(2)
	close(g.gates[0])
	waitFor(t, "both queued batches in flight at once", func() bool { return g.led(1, 2) })
	close(g.gates[1])
	close(g.gates[2])
	g.finish()
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

// TestPipelinedRunsSameAsMemory: random pipelines of BF commands, mostly
// runs of adds or tests on one key broken by other commands (a test after
// adds, other keys, a full non-scaling filter, NOCREATE, DEL, wrong
// arity, unknown commands), answer on the Redis backend exactly as on the
// memory backend, reply by reply.
func TestPipelinedRunsSameAsMemory(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Start(t)
	_, redAddr := startServer(t, Config{Backend: "redis://" + rd.Addr()})
	_, memAddr := startServer(t, Config{})
	red, mem := newClient(t, redAddr, 2), newClient(t, memAddr, 2)
	rng := rand.New(rand.NewPCG(15, 2))
	item := func() string { return "x" + strconv.Itoa(rng.IntN(60)) }
	key := func() string { return []string{"a", "a", "a", "ns", "b"}[rng.IntN(5)] }
	gen := func() []any {
		switch k := key(); rng.IntN(14) {
		case 0, 1, 2, 3:
			return []any{"BF.ADD", k, item()}
		case 4, 5:
			return []any{"bf.madd", k, item(), item(), item()}
		case 6, 7, 8:
			return []any{"BF.EXISTS", k, item()}
		case 9:
			return []any{"BF.MEXISTS", k, item(), item()}
		case 10:
			return []any{"BF.INSERT", k, "NOCREATE", "ITEMS", item()}
		case 11:
			return []any{[]any{"BF.ADD", k}, []any{"BF.EXISTS", k, "x", "y"}, []any{"BF.NOPE", k}}[rng.IntN(3)].([]any)
		case 12:
			return []any{"BF.RESERVE", "ns", "0.01", "8", "NONSCALING"}
		default:
			return []any{[]any{"DEL", k}, []any{"BF.CARD", k}, []any{"PING"}}[rng.IntN(3)].([]any)
		}
	}
	for round := range 60 {
		var cmds [][]any
		for range 1 + rng.IntN(40) {
			cmds = append(cmds, gen())
		}
		got, want := pipelineReplies(ctx, red, cmds), pipelineReplies(ctx, mem, cmds)
		for i := range cmds {
			if got[i] != want[i] {
				t.Fatalf("round %d, command %d of %d %v:\nredis  %s\nmemory %s", round, i, len(cmds), cmds[i], got[i], want[i])
			}
		}
	}
}

// pipelineReplies sends cmds in one pipeline and formats each reply.
func pipelineReplies(ctx context.Context, c *redis.Client, cmds [][]any) []string {
	p := c.Pipeline()
	var res []*redis.Cmd
	for _, args := range cmds {
		res = append(res, p.Do(ctx, args...))
	}
	p.Exec(ctx) // the replies' errors are in res
	out := make([]string, len(res))
	for i, r := range res {
		v, err := r.Result()
		out[i] = fmt.Sprint(v)
		if err != nil {
			out[i] = "error: " + err.Error()
		}
	}
	return out
}

// TestPipelinedRunIsOneBatch: a pipeline of 200 BF.ADD (or BF.EXISTS) on
// one filter takes a handful of round trips to Redis, not 200, and its
// replies are in order.
func TestPipelinedRunIsOneBatch(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Start(t)
	srv, addr := startServer(t, Config{Backend: "redis://" + rd.Addr()})
	c := newClient(t, addr, 2)
	want(t, c, cmd("OK", "BF.RESERVE", "k", "0.0000001", "10000"), cmd("1", "BF.ADD", "k", "x"),
		cmd("1", "BF.EXISTS", "k", "x"))
	trips := countTrips(srv)
	for _, verb := range []string{"BF.ADD", "BF.EXISTS"} {
		var cmds [][]any
		for i := range 200 {
			cmds = append(cmds, []any{verb, "k", "i" + strconv.Itoa(i%150)})
		}
		for i, r := range pipelineReplies(ctx, c, cmds) {
			if want := fmt.Sprint(map[bool]int{true: 1}[i < 150 || verb == "BF.EXISTS"]); r != want {
				t.Fatalf("%s reply %d: %s, want %s", verb, i, r, want)
			}
		}
	}
	if got := trips.reset(); got["evalsha"] > 20 || got["pipeline"] > 20 {
		t.Errorf("round trips for 200 pipelined BF.ADD and 200 BF.EXISTS: %v", got)
	}
}
