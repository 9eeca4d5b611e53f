package server

import (
	"bytes"
	"context"
	"time"
)

// Runs: a connection served by a goroutine (conn_stream.go) whose client
// pipelines BF.ADD or BF.MADD (or BF.EXISTS or BF.MEXISTS) on one filter
// hands the backend those commands together when the backend takes runs
// (the Redis backend: one lane entry, so one batch and one wakeup for the
// lot; redisstore_batch.go), where one at a time would cost a round trip
// and a wakeup each. A run is the commands of one kind on one key that
// follow each other in the connection's input and are already received
// whole: gathering never waits for input. Any other command ends the run
// first, so replies keep the commands' order and a BF.EXISTS sees the
// BF.ADD before it. Each command is counted, timed (the run's time split
// evenly) and answered as it would be alone.

// runStore is a bloomStore that takes runs.
type runStore interface {
	// AddRun adds each command's items, in order, as Add would one
	// command after the other, each with its own create options.
	AddRun(ctx context.Context, key string, ops []*batchOp)
	// ExistsRun tests each command's items, as Exists would.
	ExistsRun(ctx context.Context, key string, ops []*batchOp)
}

// maxRun bounds the commands of a run. Its items are bounded by
// batchItems, and its copies by twice the read buffer: a run starts with
// a small command (at most ioBuffer bytes of arguments, else it runs as
// usual), and the commands that join it were whole in the read buffer
// after it.
const maxRun = 256

// connRun is a connection's run being gathered: copies of its commands'
// keys and items, since the reader's buffer moves on.
type connRun struct {
	kind  laneKind
	cmds  []*command
	ends  []int    // per command, its items' end in spans
	spans [][2]int // per item, its bytes in arena
	arena []byte   // the key, then the items
	key   int      // the key's length (arena[:key])
	items int

	// Scratch of endRun, kept between runs.
	opsBuf []batchOp
	ptrs   []*batchOp
	argv   [][]byte
	res    []addResult
	found  []bool
}

// runnable reports whether cmd may start a run on c, and of which kind.
func (c *conn) runnable(cmd *command) (laneKind, bool) {
	if _, ok := c.srv.bloom.(runStore); !ok || c.tx != nil || c.srv.persist != nil {
		return 0, false
	}
	return runKind(cmd)
}

// runKind is the lane kind of the commands runs take.
func runKind(cmd *command) (laneKind, bool) {
	switch cmd.name {
	case "bf.add", "bf.madd":
		return laneAdd, true
	case "bf.exists", "bf.mexists":
		return laneExists, true
	}
	return 0, false
}

// dispatchStream is dispatch for a connection served by a goroutine:
// args join the run being gathered, start one, or run as usual.
func (c *conn) dispatchStream(args [][]byte) {
	if len(c.pipe.cmds) > 0 {
		if c.pipe.fits(c, args) {
			c.pipe.add(c.srv.cmds.lookup(args[0]), args)
			if len(c.pipe.cmds) >= maxRun || !c.r.Complete() {
				c.endRun()
			}
			return
		}
		c.endRun()
	}
	cmd := c.resolve(args)
	if cmd == nil {
		return
	}
	if kind, ok := c.runnable(cmd); ok && small(args) && c.r.Complete() {
		c.pipe.kind = kind
		c.pipe.arena = append(c.pipe.arena[:0], args[1]...)
		c.pipe.key = len(args[1])
		c.pipe.add(cmd, args)
		return
	}
	c.execute(cmd, args)
}

// small reports whether a command of args may start a run.
func small(args [][]byte) bool {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return n <= ioBuffer && len(args)-2 <= batchItems
}

// fits reports whether args, a command received whole after the run's,
// joins it: the same kind, on the same key, with the right number of
// arguments, within the bounds.
func (r *connRun) fits(c *conn, args [][]byte) bool {
	cmd := c.srv.cmds.lookup(args[0])
	if cmd == nil {
		return false
	}
	kind, ok := runKind(cmd) // of arity 3 or more: a key
	return ok && kind == r.kind && cmd.arityOK(len(args)) && bytes.Equal(args[1], r.arena[:r.key]) &&
		r.items+len(args)-2 <= batchItems
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
	store := c.srv.bloom.(runStore)
	if r.kind == laneAdd {
		store.AddRun(c.ctx, string(r.arena[:r.key]), ops)
	} else {
		store.ExistsRun(c.ctx, string(r.arena[:r.key]), ops)
	}
	c.clock = time.Since(c.srv.started)
	per := uint64(c.clock-start) / uint64(n)
	for i, cmd := range r.cmds {
		errs := c.errs
		switch o := ops[i]; cmd.name {
		case "bf.add":
			c.addReply(o.res, o.err)
		case "bf.madd":
			c.addManyReply(o.res, o.n, o.err)
		default:
			c.existsReply(o.found, cmd.name == "bf.mexists", o.err)
		}
		count := &c.shard.cmds[cmd.idx]
		count.observe(per)
		count.calls.Add(1)
		if c.errs != errs {
			count.errors.Add(1)
		}
		if c.srv.track.active.Load() != 0 {
			c.afterCommand(cmd, [][]byte{nil, r.arena[:r.key]}) // the key is all it reads of args
		}
		c.shard.processed.Add(1)
	}
	r.reset()
}

// ops makes the run's commands into the backend's batchOps, in the
// run's scratch.
func (r *connRun) ops(c *conn) []*batchOp {
	r.argv = r.argv[:0]
	for _, sp := range r.spans {
		r.argv = append(r.argv, r.arena[sp[0]:sp[1]:sp[1]])
	}
	r.res, r.found = resized(r.res, r.items), resized(r.found, r.items)
	r.opsBuf = resized(r.opsBuf, len(r.cmds))
	r.ptrs = r.ptrs[:0]
	from := 0
	for i, to := range r.ends {
		o := &r.opsBuf[i]
		*o = batchOp{items: r.argv[from:to]}
		if r.kind == laneAdd {
			o.create, o.res = c.defaultCreate(), r.res[from:to]
		} else {
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
