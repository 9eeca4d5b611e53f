package server

import (
	"bytes"
	"context"
	"time"

	"github.com/bloomery/bloom/cuckoo"
)

// Runs: a client that pipelines commands of one kind on one filter
// (BF.ADD or BF.MADD, BF.EXISTS or BF.MEXISTS, CF.EXISTS or CF.MEXISTS,
// CF.ADD or CF.ADDNX)
// has them run together, as one call to the backend, where one at a time
// would pay the backend's cost per call each time: a round trip and a
// wakeup on the Redis backend (one lane entry for the lot,
// redisstore_batch.go), the key's lock, lookup and one cache miss after
// another on the memory backend (one Exists over all their items, whose
// batch tests overlap the misses: docs/DESIGN.md §8, "Runs"). Both kinds of
// connection gather them: those served by a goroutine (conn_stream.go)
// and those of an event loop (loop_conn_linux.go).
//
// A run is the commands of one kind on one key that follow each other in
// the connection's input and are already received whole: gathering never
// waits for input. Any other command ends the run first, so replies keep
// the commands' order and a BF.EXISTS sees the BF.ADD before it; so does
// the end of what was received, and anything that ends the connection's
// turn. Each command is counted, timed (the run's time split evenly),
// tracked and answered as it would be alone. Tests run together on any
// backend (a test changes no filter, so testing the items of several
// commands at once answers each as it would alone; a key whose time has
// passed is deleted by the first, and the rest find nothing, as alone); adds only on a
// backend that takes add runs (addRunStore): the Redis backend, and the
// memory backend, which journals each command's own record and whose
// replies wait for the log as one command's do (endRun); cuckoo adds on a
// backend that takes them (cuckooAddRunStore: the memory backend).

// runKind is what a run's commands do.
type runKind uint8

const (
	runAdd      runKind = iota // BF.ADD, BF.MADD
	runExists                  // BF.EXISTS, BF.MEXISTS
	runCFExists                // CF.EXISTS, CF.MEXISTS
	runCFAdd                   // CF.ADD, CF.ADDNX
)

// addRunStore is a bloomStore that takes runs of adds.
type addRunStore interface {
	// AddRun adds each command's items, in order, as Add would one
	// command after the other, each with its own create options.
	AddRun(ctx context.Context, key string, ops []*batchOp)
}

// cuckooAddRunStore is a cuckooStore that takes runs of CF.ADDs and
// CF.ADDNXs.
type cuckooAddRunStore interface {
	// CFAddRun adds each command's item, in order, as Add would one
	// command after the other (each creating a missing filter as CF.ADD
	// does, nx for CF.ADDNX), its outcome in the op's cf. (Not AddRun:
	// the Redis backend's one store has addRunStore's.)
	CFAddRun(ctx context.Context, key string, ops []*batchOp)
}

// existsRunStore is a bloomStore that takes runs of tests itself (else
// one Exists over all their items serves them: existsAll).
type existsRunStore interface {
	// ExistsRun tests each command's items, as Exists would.
	ExistsRun(ctx context.Context, key string, ops []*batchOp)
}

// Bounds of a run: maxRun commands, batchItems items, and maxRunBytes
// bytes of copies (its key and items). A command larger than ioBuffer
// does not start a run, and one that would take the copies past
// maxRunBytes does not join one (an event loop's input holds whole
// commands of any size, up to the query buffer limit).
const (
	maxRun      = 256
	maxRunBytes = 2 * ioBuffer
)

// connRun is a connection's run being gathered: copies of its commands'
// keys and items, since the reader's buffer moves on.
type connRun struct {
	kind  runKind
	cmds  []*command
	ends  []int    // per command, its items' end in spans
	spans [][2]int // per item, its bytes in arena
	arena []byte   // the key, then the items
	key   int      // the key's length (arena[:key])
	items int

	flight      []*batchOp    // a run started by endRunAsync, not yet answered
	flightStart time.Duration // its start

	// Scratch of endRun, kept between runs.
	opsBuf []batchOp
	ptrs   []*batchOp
	argv   [][]byte
	res    []addResult
	found  []bool
	cfRes  []cuckoo.Status
}

// runnable reports whether cmd may start a run on c, and of which kind.
func (c *conn) runnable(cmd *command) (runKind, bool) {
	kind, ok := kindOf(cmd)
	switch {
	case !ok || c.tx != nil:
		return 0, false
	case c.asyncRuns() && !asyncKind(kind):
		return 0, false // an event loop cannot wait on it: the command goes to a goroutine (slowCall)
	case kind == runAdd:
		_, takes := c.srv.bloom.(addRunStore)
		return kind, takes
	case kind == runCFExists:
		return kind, c.srv.cuckoo != nil
	case kind == runCFAdd:
		_, takes := c.srv.cuckoo.(cuckooAddRunStore)
		return kind, takes
	}
	return kind, true
}

// kindOf is the kind of run that takes cmd's calls.
func kindOf(cmd *command) (runKind, bool) {
	switch cmd.name {
	case "bf.add", "bf.madd":
		return runAdd, true
	case "bf.exists", "bf.mexists":
		return runExists, true
	case "cf.exists", "cf.mexists":
		return runCFExists, true
	case "cf.add", "cf.addnx":
		return runCFAdd, true
	}
	return 0, false
}

// dispatchStream is dispatch for a connection served by a goroutine:
// args join the run being gathered, start one, or run as usual.
func (c *conn) dispatchStream(args [][]byte) {
	if c.joinRun(args) {
		return
	}
	cmd := c.resolve(args)
	if cmd == nil || c.startRun(cmd, args) {
		return
	}
	c.execute(cmd, args)
}

// joinRun adds args to the run being gathered, if any, when they fit,
// and runs it when it is full or nothing whole follows in the input. It
// reports whether args joined; if not, the run was run first. Where runs
// end without waiting (asyncRuns) it never runs one: the event loop ends
// it (loop_conn_linux.go), and a run that args did not join is still
// pending when joinRun returns.
func (c *conn) joinRun(args [][]byte) bool {
	r := &c.pipe
	if len(r.cmds) == 0 {
		return false
	}
	cmd := r.fits(c, args)
	if cmd == nil {
		if !c.asyncRuns() {
			c.endRun()
		}
		return false
	}
	r.add(cmd, args)
	if (len(r.cmds) >= maxRun || !c.r.Complete()) && !c.asyncRuns() {
		c.endRun()
	}
	return true
}

// asyncRuns reports whether c's runs end without waiting when its input
// does (endRunAsync): an event loop's connection on the Redis backend (a
// server with loops still serves a connection that is not a socket with
// a goroutine, which waits for its runs).
func (c *conn) asyncRuns() bool {
	return c.lc != nil && c.srv.remote
}

// startRun starts a run with cmd, a command resolved on c, when it is of
// a kind runs take, small, and followed by another whole command in the
// input (alone, it runs as usual, but where runs end without waiting:
// there a run of one enters its lane without a goroutine). It reports
// whether it did.
func (c *conn) startRun(cmd *command, args [][]byte) bool {
	kind, ok := c.runnable(cmd)
	if !ok || !small(args) || !c.r.Complete() && !c.asyncRuns() {
		return false
	}
	r := &c.pipe
	r.kind = kind
	r.arena = append(r.arena[:0], args[1]...)
	r.key = len(args[1])
	r.add(cmd, args)
	return true
}

// small reports whether a command of args may start a run.
func small(args [][]byte) bool {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return n <= ioBuffer && len(args)-2 <= batchItems
}

// fits returns the command of args, a command received whole after the
// run's, when it joins the run: the same kind, on the same key, with the
// right number of arguments, within the bounds; else nil.
func (r *connRun) fits(c *conn, args [][]byte) *command {
	cmd := c.lookup(args[0])
	if cmd == nil {
		return nil
	}
	kind, ok := kindOf(cmd) // of arity 3 or more: a key
	if !ok || kind != r.kind || !cmd.arityOK(len(args)) || !bytes.Equal(args[1], r.arena[:r.key]) ||
		r.items+len(args)-2 > batchItems || len(r.cmds) >= maxRun {
		return nil
	}
	size := len(r.arena)
	for _, it := range args[2:] {
		if size += len(it); size > maxRunBytes {
			return nil
		}
	}
	return cmd
}

// add appends the command cmd with args to the run.
func (r *connRun) add(cmd *command, args [][]byte) {
	r.cmds = append(r.cmds, cmd)
	for _, it := range args[2:] {
		r.spans = append(r.spans, [2]int{len(r.arena), len(r.arena) + len(it)})
		r.arena = append(r.arena, it...)
	}
	r.ends = append(r.ends, len(r.spans))
	r.items += len(args) - 2
}

// runKeep bounds the arena a connection keeps between runs.
const runKeep = 64 << 10

// endRun runs the run gathered, if any, and writes its replies.
func (c *conn) endRun() {
	r := &c.pipe
	n := len(r.cmds)
	if n == 0 {
		return
	}
	ops := r.ops(c)
	start := c.started()
	key := c.filterKey(r.arena[:r.key])
	logged := false // adds admitted to the log, whose replies wait for it
	switch rs, takes := c.srv.bloom.(existsRunStore); {
	case r.kind == runAdd: // started only on an addRunStore (runnable)
		logged = r.addRun(c, func() { c.srv.bloom.(addRunStore).AddRun(c.ctx, key, ops) }, ops)
	case r.kind == runCFAdd: // only on a cuckooAddRunStore
		logged = r.addRun(c, func() { c.srv.cuckoo.(cuckooAddRunStore).CFAddRun(c.ctx, key, ops) }, ops)
	case r.kind == runExists && takes:
		rs.ExistsRun(c.ctx, key, ops)
	default:
		r.existsAll(c, key, ops)
	}
	c.finishRun(ops, start, logged)
}

// asyncRunStore is a bloomStore that takes runs without waiting for
// them (the Redis backend, for an event loop's connections).
type asyncRunStore interface {
	AddRunAsync(ctx context.Context, key string, ops []*batchOp, done func())
	ExistsRunAsync(ctx context.Context, key string, ops []*batchOp, done func())
}

// asyncKind reports whether runs of kind end without waiting where runs
// do (asyncRuns): the kinds an asyncRunStore takes.
func asyncKind(kind runKind) bool { return kind == runAdd || kind == runExists }

// endRunAsync starts the run gathered, where runs end without waiting
// (asyncRuns; runnable starts no other kind there), and reports whether
// it did: then done is called once it is answered, and finishAsync
// writes its replies.
func (c *conn) endRunAsync(done func()) bool {
	r := &c.pipe
	if len(r.cmds) == 0 || !c.asyncRuns() {
		return false
	}
	st := c.srv.bloom.(asyncRunStore) // the Redis backend's
	ops := r.ops(c)
	r.flight, r.flightStart = ops, c.started()
	key := c.filterKey(r.arena[:r.key])
	if r.kind == runAdd {
		st.AddRunAsync(c.ctx, key, ops, done)
	} else {
		st.ExistsRunAsync(c.ctx, key, ops, done)
	}
	return true
}

// finishAsync writes the replies of the run endRunAsync started, if any.
func (c *conn) finishAsync() {
	r := &c.pipe
	if r.flight == nil {
		return
	}
	ops := r.flight
	r.flight = nil
	c.finishRun(ops, r.flightStart, false)
}

// finishRun counts, times and answers the run's commands, run with ops
// from start.
func (c *conn) finishRun(ops []*batchOp, start time.Duration, logged bool) {
	r := &c.pipe
	n := len(r.cmds)
	c.clock = time.Since(c.srv.started)
	per := uint64(c.clock-start) / uint64(n)
	var keyArgs [][]byte // what afterCommand reads of a command's args: its key
	if c.srv.track.active.Load() != 0 {
		keyArgs = [][]byte{nil, r.arena[:r.key]}
	}
	for i, cmd := range r.cmds {
		errs := c.errs
		replyStart := c.w.Buffered()
		switch o := ops[i]; cmd.name {
		case "bf.add":
			c.addReply(o.res, o.err)
		case "bf.madd":
			c.addManyReply(o.res, o.n, o.err)
		case "cf.add", "cf.addnx":
			if o.err != nil {
				c.fail(o.err)
			} else {
				c.cfAddReply(o.cf[0])
			}
		default:
			c.existsReply(o.found, cmd.name[3] == 'm', o.err) // bf.mexists, cf.mexists
		}
		count := &c.shard.cmds[cmd.idx]
		count.observe(per)
		count.calls.Add(1)
		if c.errs != errs {
			count.errors.Add(1)
		}
		if logged { // as runLogged: each reply waits for the log to be durable
			c.unlogged = append(c.unlogged, replySpan{replyStart, c.w.Buffered()})
		}
		if keyArgs != nil {
			c.afterCommand(cmd, keyArgs)
		}
		c.shard.processed.Add(1)
	}
	r.reset()
}

// addRun runs the run's adds (run, which calls the backend's AddRun with
// ops), admitted first to the log of a server that has one, as runLogged
// admits one command: room for the records of all of them, or each is
// refused with the log's error and nothing changes. It reports whether
// they were admitted to a log.
func (r *connRun) addRun(c *conn, run func(), ops []*batchOp) bool {
	p := c.srv.persist
	if p == nil {
		run()
		return false
	}
	bound := r.recordBound()
	if err := p.admit(bound); err != nil {
		for _, o := range ops {
			o.err = err
		}
		return false
	}
	run()
	p.release(bound)
	return true
}

// recordBound is the sum of recordBound over the run's commands: their
// names, key and items, measured without building their arguments.
func (r *connRun) recordBound() int64 {
	var n int64
	from := 0
	for i, cmd := range r.cmds {
		size := len(cmd.name) + r.key
		for _, sp := range r.spans[from:r.ends[i]] {
			size += sp[1] - sp[0]
		}
		n += recordBoundOf(size, 2+r.ends[i]-from)
		from = r.ends[i]
	}
	return n
}

// existsAll tests the items of all the run's commands in one call to the
// backend's Exists, each command answered with its own items' results
// (or the call's error).
func (r *connRun) existsAll(c *conn, key string, ops []*batchOp) {
	var err error
	if r.kind == runCFExists {
		err = c.srv.cuckoo.Exists(c.ctx, key, r.argv, r.found)
	} else {
		err = c.srv.bloom.Exists(c.ctx, key, r.argv, r.found)
	}
	for _, o := range ops {
		o.err = err
	}
}

// ops makes the run's commands into the backend's batchOps, in the
// run's scratch.
func (r *connRun) ops(c *conn) []*batchOp {
	r.argv = r.argv[:0]
	for _, sp := range r.spans {
		r.argv = append(r.argv, r.arena[sp[0]:sp[1]:sp[1]])
	}
	switch r.kind { // the answers' scratch of the run's kind
	case runAdd:
		r.res = resized(r.res, r.items)
	case runCFAdd:
		r.cfRes = resized(r.cfRes, r.items)
	default:
		r.found = resized(r.found, r.items)
	}
	r.opsBuf = resized(r.opsBuf, len(r.cmds))
	r.ptrs = r.ptrs[:0]
	from := 0
	for i, to := range r.ends {
		o := &r.opsBuf[i]
		*o = batchOp{items: r.argv[from:to]}
		switch r.kind {
		case runAdd:
			o.create, o.res = c.defaultCreate(), r.res[from:to]
		case runCFAdd:
			o.cf, o.nx = r.cfRes[from:to], r.cmds[i].name == "cf.addnx"
		default:
			o.found = r.found[from:to]
		}
		r.ptrs = append(r.ptrs, o)
		from = to
	}
	return r.ptrs
}

// reset empties the run, keeping its scratch unless large.
func (r *connRun) reset() {
	clear(r.cmds)
	clear(r.ptrs)
	clear(r.argv)
	clear(r.opsBuf)
	r.cmds, r.ends, r.spans, r.items = r.cmds[:0], r.ends[:0], r.spans[:0], 0
	if cap(r.arena) > runKeep {
		r.arena, r.argv = nil, nil
	}
}

// resized returns s with length n, reusing its array when large enough.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
