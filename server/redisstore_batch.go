package server

import (
	"context"
	"sync"

	"github.com/bloomery/bloom/cuckoo"
)

// Coalescing: the Redis backend's BF.ADD, BF.MADD, BF.INSERT, BF.EXISTS
// and BF.MEXISTS wait on a round trip to Redis, and a round trip costs
// both processes far more than an item does (docs/BENCHMARKS.md, issue 15:
// one script call per command spent two thirds of the server's CPU time
// in the client library's socket writes, reads and pool, and Redis ~15 µs
// per call before the first item). So commands on the same filter take
// turns in a lane, one per filter and kind (adds or tests): a command
// that finds its lane idle runs at once, alone (no added latency at low
// load); the commands that arrive while it is in flight queue, and when
// it returns the first of them leads them all, up to batchItems items,
// through one batched call (redisfilter's AddMany or ExistsMany over
// their items concatenated in arrival order), then hands the lane on.
//
// Each command's reply is what it would have been run alone, after the
// commands queued before it: AddMany answers a repeat within its batch
// "not new", as the serial order would; a whole-command error (wrong
// type, a missing key with NOCREATE) or an item's error (a full
// non-scaling filter) stays with its own command, since whatever is not
// the plain case (a filter not yet opened, a batch stopped by an error)
// runs each remaining command alone, in order (addAlone), as before
// coalescing. A connection waits for each command's reply (or its run's,
// conn_run.go) before it runs the next, so its commands keep their
// order. Batches are bounded by batchItems (an entry larger than that
// goes alone), and a queue holds at most one entry per connection.
//
// A filter this server holds a copy of has two batches of adds in flight
// (laneDepth, redisfilter's mirrored writes): the second merges into the
// copy after the first has merged whole, so the serial order above
// holds; a command of more items than one mirrored write takes (16384)
// is atomic per that many.
//
// An event loop's connection cannot wait in a lane: its loop serves
// every other connection. Its runs enter as asynchronous waiters
// (AddRunAsync, ExistsRunAsync; conn.endRunAsync): a waiter with a done
// function, called once it is answered, and its lane work, and no
// goroutine of its own. A batch whose first waiter is asynchronous is
// led by a new goroutine, which goes on leading the batches after it
// while theirs are asynchronous too, and wakes a synchronous first
// waiter to lead its own. So a busy filter is served by one goroutine,
// batch after batch, with no hand-off between them: the stateless
// server's round trips no longer wait in Go's run queue behind a
// goroutine per connection (docs/BENCHMARKS.md, "Where the stateless
// server's chain waits").

// batchItems bounds the items of one coalesced call (AddMany splits it
// further into script calls of at most 8192 bit offsets).
const batchItems = 1024

// laneKind says what a lane's commands do.
type laneKind uint8

const (
	laneAdd laneKind = iota
	laneExists
)

// laneID names a lane: a filter and a kind.
type laneID struct {
	key  string
	kind laneKind
}

// lanes are the busy lanes of a backend (an idle lane is no entry).
type lanes struct {
	mu    sync.Mutex
	busy  map[laneID]*lane
	spare sync.Pool        // of *waiter
	depth func(laneID) int // batches a lane may have in flight (nil: one); called under mu
}

// lane is one filter's queue of commands of one kind, waiting while
// calls are in flight.
type lane struct {
	queue    []*waiter
	inflight int // batches led now
}

// batchOp is one command in a lane: its arguments and its results.
type batchOp struct {
	items  [][]byte
	create *createOpts // adds
	res    []addResult // adds: per item
	found  []bool      // tests: per item
	n      int         // adds: items processed
	err    error       // the command's error

	// CF.ADD and CF.ADDNX in a run (cuckooAddRunStore).
	cf []cuckoo.Status // per item
	nx bool            // CF.ADDNX
}

// waiter is what one goroutine puts in a lane: one command, or a
// connection's run of pipelined commands (conn_run.go), which stay
// together, in order, in one batch. It is woken once: answered, or to
// lead the batch in lead (it is lead[0]).
type waiter struct {
	ops   []*batchOp
	items int
	lead  []*waiter
	wake  chan struct{}    // buffered 1
	done  func()           // an asynchronous waiter's: called once answered (not woken)
	exec  func([]*batchOp) // an asynchronous waiter's lane work, for the goroutine that leads its batch
	one   batchOp          // the command of a single-command waiter
	self  [1]*batchOp      // its ops
}

func newLanes() *lanes {
	return &lanes{busy: make(map[laneID]*lane)}
}

// waiter returns a waiter for ops (nil: its own single command, to fill
// in before run).
func (ls *lanes) waiter(ops []*batchOp) *waiter {
	w, ok := ls.spare.Get().(*waiter)
	if !ok {
		w = &waiter{wake: make(chan struct{}, 1)}
	}
	w.ops = ops
	if ops == nil {
		w.self[0] = &w.one
		w.ops = w.self[:]
	}
	return w
}

// free returns w to the pool, dropping what it points to.
func (ls *lanes) free(w *waiter) {
	*w = waiter{wake: w.wake}
	ls.spare.Put(w)
}

// enter counts w's items and enters it into id's lane. It reports
// whether the lane was idle, so that w leads a batch of its own at once;
// else w is queued, to be answered or handed a batch to lead.
func (ls *lanes) enter(id laneID, w *waiter) bool {
	for _, o := range w.ops {
		w.items += len(o.items)
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.busy[id]
	if l == nil {
		ls.busy[id] = &lane{inflight: 1}
		return true
	}
	if len(l.queue) == 0 && l.inflight < ls.depthOf(id) {
		l.inflight++
		return true
	}
	l.queue = append(l.queue, w)
	return false
}

// depthOf is how many batches id's lane may have in flight (mu held).
func (ls *lanes) depthOf(id laneID) int {
	if ls.depth == nil {
		return 1
	}
	return ls.depth(id)
}

// join enters w into id's lane and returns the batch w is to run now:
// [w] when the lane was idle, else nil after w has waited and either
// been answered by another waiter's batch (nil) or been handed a batch
// to lead.
func (ls *lanes) join(id laneID, w *waiter) []*waiter {
	if ls.enter(id, w) {
		return []*waiter{w}
	}
	<-w.wake
	return w.lead
}

// done answers the waiters of batch but its leader (batch[0], the
// caller) and hands id's lane to the next batch: the waiters queued
// meanwhile, up to batchItems items.
func (ls *lanes) done(id laneID, batch []*waiter) {
	for _, w := range batch[1:] {
		w.answered()
	}
	if next := ls.next(id); next != nil {
		ls.handOff(id, next)
	}
}

// handOff gives id's lane to batch, led by its first waiter: woken, or
// on a goroutine of its own when that one is asynchronous.
func (ls *lanes) handOff(id laneID, batch []*waiter) {
	batch[0].lead = batch
	if batch[0].done != nil {
		go ls.lead(id, batch)
		return
	}
	batch[0].wake <- struct{}{}
}

// next takes the next batch of id's lane out of its queue, for a leader
// whose batch is done: the waiters queued, up to batchItems items (at
// least one). With none queued, or more leaders than the lane's depth now
// allows (a filter's copy dropped: its watched writes would abort each
// other), the leader retires and next returns nil; the lane is idle once
// its last leader has. With fewer leaders than the depth allows and more
// queued than one batch, it also hands the batch after it to a new
// leader (handOff): a busy lane keeps its depth's batches in flight,
// where otherwise a second leader would only start when a command found
// the queue empty.
func (ls *lanes) next(id laneID) []*waiter {
	ls.mu.Lock()
	l := ls.busy[id]
	depth := ls.depthOf(id)
	if len(l.queue) == 0 || l.inflight > depth {
		if l.inflight--; l.inflight == 0 {
			delete(ls.busy, id)
		}
		ls.mu.Unlock()
		return nil
	}
	mine := l.take()
	var extra []*waiter
	if len(l.queue) > 0 && l.inflight < depth {
		l.inflight++
		extra = l.take()
	}
	ls.mu.Unlock()
	if extra != nil {
		ls.handOff(id, extra)
	}
	return mine
}

// take takes the next batch out of l's queue (not empty): the waiters
// queued, up to batchItems items, at least one.
func (l *lane) take() []*waiter {
	n, items := 0, 0
	for n < len(l.queue) && (n == 0 || items+l.queue[n].items <= batchItems) {
		items += l.queue[n].items
		n++
	}
	batch := make([]*waiter, n)
	copy(batch, l.queue)
	l.queue = append(l.queue[:0], l.queue[n:]...)
	return batch
}

// answered tells w its commands are answered.
func (w *waiter) answered() {
	if w.done != nil {
		w.done()
		return
	}
	w.wake <- struct{}{}
}

// runAsync enters w, an asynchronous waiter (done and exec set), into
// id's lane and returns at once: w.done is called once its commands are
// answered, by the goroutine that led its batch.
func (ls *lanes) runAsync(id laneID, w *waiter) {
	if ls.enter(id, w) {
		go ls.lead(id, []*waiter{w})
	}
}

// lead runs batch, whose leader is an asynchronous waiter, on the
// calling goroutine (one of its own), answers its waiters, and goes on
// with the batches after it while their leaders are asynchronous too; a
// synchronous one is handed its batch to lead itself.
func (ls *lanes) lead(id laneID, batch []*waiter) {
	for {
		batch[0].exec(opsOf(batch))
		for _, w := range batch {
			w.answered() // an asynchronous waiter goes back to the pool: not read after
		}
		if batch = ls.next(id); batch == nil {
			return
		}
		if batch[0].done == nil {
			ls.handOff(id, batch)
			return
		}
	}
}

// opsOf is the commands of batch, in order.
func opsOf(batch []*waiter) []*batchOp {
	if len(batch) == 1 {
		return batch[0].ops
	}
	var ops []*batchOp
	for _, b := range batch {
		ops = append(ops, b.ops...)
	}
	return ops
}

// run enters w into id's lane and, each time w is handed a batch (its
// own, at once, when the lane is idle), runs the batch's commands, in
// order, with exec and passes the lane on. It returns once w's commands
// are answered.
func (ls *lanes) run(id laneID, w *waiter, exec func([]*batchOp)) {
	batch := ls.join(id, w)
	if batch == nil {
		return
	}
	exec(opsOf(batch))
	ls.done(id, batch)
}

// concat is the items of batch, in order.
func concat(batch []*batchOp) [][]byte {
	if len(batch) == 1 {
		return batch[0].items
	}
	n := 0
	for _, o := range batch {
		n += len(o.items)
	}
	all := make([][]byte, 0, n)
	for _, o := range batch {
		all = append(all, o.items...)
	}
	return all
}

func (r *redisStore) Add(ctx context.Context, key string, items [][]byte, create *createOpts, res []addResult) (int, error) {
	w := r.lanes.waiter(nil)
	defer r.lanes.free(w)
	o := &w.one
	o.items, o.create, o.res = items, create, res
	r.runLane(ctx, laneID{key, laneAdd}, w, r.addBatch)
	return o.n, o.err
}

// AddRun runs adds on key's filter, in order, as Add would one by one,
// together in one batch (conn_run.go).
func (r *redisStore) AddRun(ctx context.Context, key string, ops []*batchOp) {
	w := r.lanes.waiter(ops)
	defer r.lanes.free(w)
	r.runLane(ctx, laneID{key, laneAdd}, w, r.addBatch)
}

// AddRunAsync is AddRun that returns at once and calls done once the
// commands are answered (an event loop's connection).
func (r *redisStore) AddRunAsync(ctx context.Context, key string, ops []*batchOp, done func()) {
	r.runLaneAsync(ctx, laneID{key, laneAdd}, ops, r.addBatch, done)
}

// ExistsRunAsync is ExistsRun that returns at once and calls done once
// the commands are answered.
func (r *redisStore) ExistsRunAsync(ctx context.Context, key string, ops []*batchOp, done func()) {
	r.runLaneAsync(ctx, laneID{key, laneExists}, ops, r.existsBatch, done)
}

// runLaneAsync is runLane for ops of an asynchronous waiter, answered
// by calling done.
func (r *redisStore) runLaneAsync(ctx context.Context, id laneID, ops []*batchOp, exec func(context.Context, string, []*batchOp), done func()) {
	w := r.lanes.waiter(ops)
	w.done = func() { r.lanes.free(w); done() }
	w.exec = func(batch []*batchOp) { exec(ctx, id.key, batch) }
	r.lanes.runAsync(id, w)
}

// runLane runs w's commands in id's lane with exec.
func (r *redisStore) runLane(ctx context.Context, id laneID, w *waiter, exec func(context.Context, string, []*batchOp)) {
	r.lanes.run(id, w, func(batch []*batchOp) { exec(ctx, id.key, batch) })
}

// addBatch runs the adds of batch on key's filter as one AddMany when the
// filter is open, and whatever remains after an error one command at a
// time (addAlone).
func (r *redisStore) addBatch(ctx context.Context, key string, batch []*batchOp) {
	done := 0 // commands answered
	if f := r.cache.get(key); f != nil {
		all := concat(batch)
		isNew, err := f.AddMany(ctx, all)
		if err != nil && len(isNew) >= len(all) { // not an error of one item
			for _, o := range batch {
				o.err = r.checked(key, f, err)
			}
			return
		}
		for _, o := range batch {
			k := min(len(o.items), len(isNew))
			setAddResults(o.res, isNew[:k])
			isNew = isNew[k:]
			if k < len(o.items) {
				// Stopped at o's item k: o goes on from there alone, and so
				// do the commands after it (each may fare otherwise: its
				// items may all be present in a full filter). A failure of
				// Redis itself is every remaining command's.
				if err = r.checked(key, f, err); err != errNotFound && err != errFull && err != errNoMemory {
					for _, rest := range batch[done:] {
						rest.err = err
					}
					batch[done].n = k
					return
				}
				batch[done].n = k
				break
			}
			o.n = k
			done++
		}
	}
	for _, o := range batch[done:] {
		o.n, o.err = r.addAlone(ctx, key, o.items, o.create, o.res, o.n)
	}
}

func (r *redisStore) Exists(ctx context.Context, key string, items [][]byte, found []bool) error {
	w := r.lanes.waiter(nil)
	defer r.lanes.free(w)
	o := &w.one
	o.items, o.found = items, found
	r.runLane(ctx, laneID{key, laneExists}, w, r.existsBatch)
	return o.err
}

// ExistsRun runs tests on key's filter together in one batch
// (conn_run.go).
func (r *redisStore) ExistsRun(ctx context.Context, key string, ops []*batchOp) {
	w := r.lanes.waiter(ops)
	defer r.lanes.free(w)
	r.runLane(ctx, laneID{key, laneExists}, w, r.existsBatch)
}

// existsBatch tests the items of batch in key's filter with one
// ExistsMany; a missing key (or one of another type) finds nothing.
func (r *redisStore) existsBatch(ctx context.Context, key string, batch []*batchOp) {
	found, err := r.existsAll(ctx, key, concat(batch))
	for _, o := range batch {
		if err != nil {
			o.err = err
			continue
		}
		if found == nil {
			clear(o.found)
			continue
		}
		found = found[copy(o.found, found):]
	}
}

// existsAll tests items in key's filter: nil when the key holds no
// filter.
func (r *redisStore) existsAll(ctx context.Context, key string, items [][]byte) ([]bool, error) {
	f, err := r.open(ctx, key)
	if gone(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	found, err := f.ExistsMany(ctx, items)
	if err = r.checked(key, f, err); gone(err) {
		return nil, nil
	}
	return found, err
}
