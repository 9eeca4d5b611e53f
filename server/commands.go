package server

import (
	"strings"
	"time"
)

// cmdFlags describe a command for dispatch and for COMMAND's reply.
type cmdFlags uint16

const (
	flagWrite     cmdFlags = 1 << iota // changes the keyspace
	flagReadonly                       // reads keys
	flagAdmin                          // server administration
	flagNoAuth                         // allowed before AUTH (AUTH, HELLO, QUIT)
	flagFast                           // O(1) or O(items)
	flagLoading                        // allowed while loading
	flagAllKeys                        // changes every key (FLUSHALL, FLUSHDB): invalidates every cache
	flagTxControl                      // runs at once inside MULTI (EXEC, DISCARD, MULTI, QUIT)
)

// command is one entry of the command table. Arity follows Redis: n > 0
// means exactly n arguments (the name included), -n at least n.
type command struct {
	name   string // lower case; "client|setname" for a subcommand
	arity  int
	flags  cmdFlags
	keys   [3]int // first key, last key (-1: the last argument), step
	run    func(c *conn, args [][]byte)
	subs   map[string]*command // CLIENT, CONFIG, COMMAND
	parent string              // upper-case container name, for "Try CLIENT HELP."
	// slow, when set, tells whether a call may take long (a walk of the
	// keyspace, a snapshot, a large chunk): an event loop runs it on a
	// goroutine of its own, so its other clients are not held up.
	slow func(args [][]byte) bool

	idx int // the command's counters in each statShard (metrics.bind)
}

// always is the slow predicate of commands that are always slow.
func always([][]byte) bool { return true }

// table maps lower-case command names to commands.
type table map[string]*command

// lookup finds args[0] (case-insensitively) without allocating for names
// of up to 32 bytes.
func (t table) lookup(name []byte) *command {
	var buf [32]byte
	if len(name) > len(buf) {
		return t[strings.ToLower(string(name))]
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return t[string(buf[:len(name)])]
}

// equalLower reports whether name, in any case, is lower (lower-case
// ASCII).
func equalLower(name []byte, lower string) bool {
	if len(name) != len(lower) {
		return false
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// arityOK reports whether n arguments fit cmd's arity.
func (cmd *command) arityOK(n int) bool {
	if cmd.arity >= 0 {
		return n == cmd.arity
	}
	return n >= -cmd.arity
}

// newTable builds the command table; m registers the metrics.
func newTable(m *metrics) table {
	t := table{}
	add := func(cmds ...*command) {
		for _, cmd := range cmds {
			m.bind(cmd)
			for _, sub := range cmd.subs {
				m.bind(sub)
			}
			t[cmd.name] = cmd
		}
	}
	add(bloomCommands()...)
	add(cuckooCommands()...)
	add(keyCommands()...)
	add(connCommands()...)
	add(serverCommands()...)
	add(setupCommands()...)
	add(multiCommands()...)
	add(&command{name: "command", arity: -1, flags: flagLoading, run: cmdCommand(t), subs: subcommands("COMMAND",
		&command{name: "count", arity: 2, run: cmdCommandCount(t)},
		&command{name: "info", arity: -2, run: cmdCommandInfo(t)},
		&command{name: "docs", arity: -2, run: cmdCommandDocs},
		&command{name: "list", arity: -2, run: cmdCommandList(t)},
	)})
	m.sizeShards()
	return t
}

// subcommands names each sub "parent|sub" and indexes them.
func subcommands(parent string, subs ...*command) map[string]*command {
	m := make(map[string]*command, len(subs))
	for _, s := range subs {
		m[s.name] = s
		s.name = strings.ToLower(parent) + "|" + s.name
		s.parent = parent
	}
	return m
}

// dispatch runs one command: resolve, then execute.
func (c *conn) dispatch(args [][]byte) {
	if cmd := c.resolve(args); cmd != nil {
		c.execute(cmd, args)
	}
}

// resolve finds the command args call for: lookup, subcommand, arity,
// authentication. When one of them refuses it, it writes the error reply
// and returns nil. Inside MULTI, it queues the command (answering
// QUEUED) and returns nil; a refused command aborts the transaction.
func (c *conn) resolve(args [][]byte) *command {
	cmd := c.check(args)
	switch {
	case c.tx == nil:
		return cmd
	case cmd == nil:
		c.tx.aborted = true
		return nil
	case cmd.flags&flagTxControl == 0:
		c.queue(cmd, args)
		return nil
	}
	return cmd
}

// lookup returns the command called name (nil: none), the connection's
// last one when it is the same: pipelines repeat a command.
func (c *conn) lookup(name []byte) *command {
	cmd := c.lastCmd
	if cmd == nil || !equalLower(name, cmd.name) {
		cmd = c.srv.cmds.lookup(name)
		c.lastCmd = cmd
	}
	return cmd
}

// check is resolve outside a transaction.
func (c *conn) check(args [][]byte) *command {
	cmd := c.lookup(args[0])
	if cmd == nil {
		c.unknownCommand(args)
		return nil
	}
	if cmd.subs != nil && len(args) >= 2 {
		sub := cmd.subs[strings.ToLower(string(args[1]))]
		if sub == nil {
			c.errorReply(cmd, "ERR unknown subcommand '"+truncate(string(args[1]), 128)+"'. Try "+strings.ToUpper(cmd.name)+" HELP.")
			return nil
		}
		cmd = sub
	}
	if !cmd.arityOK(len(args)) {
		msg := "wrong number of arguments for '" + cmd.name + "' command"
		if cmd.name == "exec" { // Redis answers so even outside MULTI
			c.tx = nil
			c.errorReply(cmd, "EXECABORT Transaction discarded because of: "+msg)
			return nil
		}
		c.errorReply(cmd, "ERR "+msg)
		return nil
	}
	if !c.authed && cmd.flags&flagNoAuth == 0 {
		c.errorReply(cmd, "NOAUTH Authentication required.")
		return nil
	}
	return cmd
}

// execute runs a resolved command, through the log's admission if it
// writes.
func (c *conn) execute(cmd *command, args [][]byte) {
	if cmd.flags&flagWrite != 0 && c.srv.persist != nil {
		c.runLogged(cmd, args)
	} else {
		c.run(cmd, args)
	}
	if c.srv.track.active.Load() != 0 {
		c.afterCommand(cmd, args)
	}
	c.shard.processed.Add(1)
}

// slowCall reports whether a call of cmd with args may take long (see
// command.slow, waitsOnBackend); EXEC's depends on what it runs.
func (c *conn) slowCall(cmd *command, args [][]byte) bool {
	if cmd.name == "exec" {
		return c.execSlow()
	}
	return c.waitsOnBackend(cmd) || cmd.slow != nil && cmd.slow(args)
}

// waitsOnBackend reports whether cmd may wait on a round trip: on the
// Redis backend, a command that reads or writes keys (every one that
// reaches the backend but the slow ones, which go off the loop anyway).
func (c *conn) waitsOnBackend(cmd *command) bool {
	return c.srv.remote && cmd.flags&(flagWrite|flagReadonly) != 0
}

// run runs cmd's handler, counting and timing it. Its start is the end of
// the command before it in the same input (c.clock), so the clock is read
// once per command, as a duration since the server started (a single
// read of the monotonic clock): it cost 4% of BF.ADD's CPU at -P 16 read
// twice (issue 15), and what a command is charged besides is the parsing
// of its own arguments.
func (c *conn) run(cmd *command, args [][]byte) {
	n := &c.shard.cmds[cmd.idx]
	start := c.started()
	errsBefore := c.errs
	cmd.run(c, args)
	c.clock = time.Since(c.srv.started)
	n.observe(uint64(c.clock - start))
	n.calls.Add(1)
	if c.errs != errsBefore {
		n.errors.Add(1)
	}
}

// started is the start of the command about to run: the end of the one
// before it, or now.
func (c *conn) started() time.Duration {
	if c.clock != 0 {
		return c.clock
	}
	return time.Since(c.srv.started)
}

// runLogged runs a write command of a server with a log: admitted first
// (room in the log for its records, else MISCONF and nothing changes),
// its reply marked as one flush must make durable first.
func (c *conn) runLogged(cmd *command, args [][]byte) {
	bound := recordBound(args)
	if err := c.srv.persist.admit(bound); err != nil {
		c.errorReply(cmd, wireError(err))
		return
	}
	start := c.w.Buffered()
	c.run(cmd, args)
	c.srv.persist.release(bound)
	c.unlogged = append(c.unlogged, replySpan{start, c.w.Buffered()})
}

// unknownCommand writes Redis's reply to an unknown command.
func (c *conn) unknownCommand(args [][]byte) {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		b.WriteString("'" + truncate(string(a), 128-b.Len()) + "' ")
	}
	c.srv.metrics.unknown.Inc()
	c.error("ERR unknown command '" + truncate(string(args[0]), 128) + "', with args beginning with: " + b.String())
}

// errorReply writes msg for a command refused before it ran.
func (c *conn) errorReply(cmd *command, msg string) {
	n := &c.shard.cmds[cmd.idx]
	n.calls.Add(1)
	n.errors.Add(1)
	c.error(msg)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
