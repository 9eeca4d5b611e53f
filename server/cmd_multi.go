package server

// MULTI, EXEC and DISCARD: a client's transaction (rueidis sends CLIENT
// CACHING YES, MULTI, PTTL key, the read, EXEC for each read it caches).
//
// Between MULTI and EXEC, commands are checked (name, arity,
// authentication) and queued, each answered +QUEUED; a command refused
// there makes EXEC answer EXECABORT, as Redis does. EXEC runs the queue
// in order and answers an array of the replies. Limits (docs/SERVER.md,
// "Transactions"): the commands run one after another, not isolated
// from other clients' commands on the same keys, and each write is
// logged on its own, so a crash can keep part of a transaction. WATCH is
// not supported.

// txState is a transaction being queued.
type txState struct {
	cmds    []queuedCmd
	aborted bool // a command was refused while queuing
}

type queuedCmd struct {
	cmd  *command
	args [][]byte // copies: the reader's buffer is reused
}

// maxQueued bounds the commands one transaction may queue.
const maxQueued = 1 << 20

func multiCommands() []*command {
	return []*command{
		{name: "multi", arity: 1, flags: flagFast | flagLoading | flagTxControl, run: cmdMulti},
		{name: "exec", arity: 1, flags: flagLoading | flagTxControl, run: cmdExec},
		{name: "discard", arity: 1, flags: flagFast | flagLoading | flagTxControl, run: cmdDiscard},
	}
}

func cmdMulti(c *conn, _ [][]byte) {
	if c.tx != nil {
		c.error("ERR MULTI calls can not be nested")
		return
	}
	c.tx = &txState{}
	c.ok()
}

func cmdDiscard(c *conn, _ [][]byte) {
	if c.tx == nil {
		c.error("ERR DISCARD without MULTI")
		return
	}
	c.tx = nil
	c.ok()
}

func cmdExec(c *conn, _ [][]byte) {
	tx := c.tx
	if tx == nil {
		c.error("ERR EXEC without MULTI")
		return
	}
	c.tx = nil
	if tx.aborted {
		c.error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	c.w.ArrayHeader(len(tx.cmds))
	c.inExec = true
	for _, q := range tx.cmds {
		c.execute(q.cmd, q.args)
	}
	c.inExec = false
}

// queue adds a checked command to c's transaction and answers QUEUED.
func (c *conn) queue(cmd *command, args [][]byte) {
	if len(c.tx.cmds) >= maxQueued {
		c.tx.aborted = true
		c.error("ERR too many commands in the transaction")
		return
	}
	cp := make([][]byte, len(args))
	for i, a := range args {
		cp[i] = append([]byte(nil), a...)
	}
	c.tx.cmds = append(c.tx.cmds, queuedCmd{cmd, cp})
	c.w.SimpleString("QUEUED")
}

// execSlow reports whether c's EXEC may take long: a queued command may.
func (c *conn) execSlow() bool {
	if c.tx == nil {
		return false
	}
	for _, q := range c.tx.cmds {
		if c.waitsOnBackend(q.cmd) || q.cmd.slow != nil && q.cmd.slow(q.args) {
			return true
		}
	}
	return false
}
