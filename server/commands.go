package server

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// cmdFlags describe a command for dispatch and for COMMAND's reply.
type cmdFlags uint16

const (
	flagWrite    cmdFlags = 1 << iota // changes the keyspace
	flagReadonly                      // reads keys
	flagAdmin                         // server administration
	flagNoAuth                        // allowed before AUTH (AUTH, HELLO, QUIT)
	flagFast                          // O(1) or O(items)
	flagLoading                       // allowed while loading
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

	// Metrics, resolved once so dispatch does no label lookups.
	calls   prometheus.Counter
	errors  prometheus.Counter
	latency prometheus.Observer
}

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
	add(keyCommands()...)
	add(connCommands()...)
	add(serverCommands()...)
	add(&command{name: "command", arity: -1, flags: flagLoading, run: cmdCommand(t), subs: subcommands("COMMAND",
		&command{name: "count", arity: 2, run: cmdCommandCount(t)},
		&command{name: "info", arity: -2, run: cmdCommandInfo(t)},
		&command{name: "docs", arity: -2, run: cmdCommandDocs},
		&command{name: "list", arity: -2, run: cmdCommandList(t)},
	)})
	for _, sub := range t["command"].subs {
		m.bind(sub)
	}
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

// dispatch runs one command: lookup, arity, authentication, then the
// handler, counting and timing it.
func (c *conn) dispatch(args [][]byte) {
	cmd := c.srv.cmds.lookup(args[0])
	if cmd == nil {
		c.unknownCommand(args)
		return
	}
	if cmd.subs != nil && len(args) >= 2 {
		sub := cmd.subs[strings.ToLower(string(args[1]))]
		if sub == nil {
			c.errorReply(cmd, "ERR unknown subcommand '"+truncate(string(args[1]), 128)+"'. Try "+strings.ToUpper(cmd.name)+" HELP.")
			return
		}
		cmd = sub
	}
	if !cmd.arityOK(len(args)) {
		c.errorReply(cmd, "ERR wrong number of arguments for '"+cmd.name+"' command")
		return
	}
	if !c.authed && cmd.flags&flagNoAuth == 0 {
		c.errorReply(cmd, "NOAUTH Authentication required.")
		return
	}
	if cmd.flags&flagWrite != 0 && c.srv.persist != nil {
		c.runLogged(cmd, args)
	} else {
		c.run(cmd, args)
	}
	c.srv.stats.commands.Add(1)
}

// run runs cmd's handler, counting and timing it.
func (c *conn) run(cmd *command, args [][]byte) {
	start := time.Now()
	errsBefore := c.errs
	cmd.run(c, args)
	cmd.latency.Observe(time.Since(start).Seconds())
	cmd.calls.Inc()
	if c.errs != errsBefore {
		cmd.errors.Inc()
	}
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
	cmd.calls.Inc()
	cmd.errors.Inc()
	c.error(msg)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
