package server

import (
	"slices"
	"strings"
)

// COMMAND and its subcommands: enough for redis-cli and client libraries
// (go-redis reads COMMAND to route commands in cluster mode).

// flagNames are the flags COMMAND reports.
func (cmd *command) flagNames() []string {
	var out []string
	for _, f := range []struct {
		bit  cmdFlags
		name string
	}{{flagWrite, "write"}, {flagReadonly, "readonly"}, {flagAdmin, "admin"}, {flagNoAuth, "no_auth"},
		{flagFast, "fast"}, {flagLoading, "loading"}} {
		if cmd.flags&f.bit != 0 {
			out = append(out, f.name)
		}
	}
	if cmd.flags&flagWrite != 0 {
		out = append(out, "denyoom")
	}
	return out
}

// writeInfo writes cmd's COMMAND entry in Redis 7's ten-field form.
func (c *conn) writeCommandInfo(cmd *command) {
	c.w.ArrayHeader(10)
	c.w.BulkString(cmd.name)
	c.w.Integer(int64(cmd.arity))
	flags := cmd.flagNames()
	c.w.ArrayHeader(len(flags))
	for _, f := range flags {
		c.w.SimpleString(f)
	}
	c.w.Integer(int64(cmd.keys[0]))
	c.w.Integer(int64(cmd.keys[1]))
	c.w.Integer(int64(cmd.keys[2]))
	c.w.ArrayHeader(0) // ACL categories
	c.w.ArrayHeader(0) // tips
	c.w.ArrayHeader(0) // key specs
	subs := sortedSubs(cmd)
	c.w.ArrayHeader(len(subs))
	for _, s := range subs {
		c.writeCommandInfo(s)
	}
}

func sortedSubs(cmd *command) []*command {
	var subs []*command
	for _, s := range cmd.subs {
		subs = append(subs, s)
	}
	slices.SortFunc(subs, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return subs
}

// sorted lists the table's commands by name.
func (t table) sorted() []*command {
	var cmds []*command
	for _, cmd := range t {
		cmds = append(cmds, cmd)
	}
	slices.SortFunc(cmds, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return cmds
}

func cmdCommand(t table) func(c *conn, args [][]byte) {
	return func(c *conn, _ [][]byte) {
		cmds := t.sorted()
		c.w.ArrayHeader(len(cmds))
		for _, cmd := range cmds {
			c.writeCommandInfo(cmd)
		}
	}
}

func cmdCommandCount(t table) func(c *conn, args [][]byte) {
	return func(c *conn, _ [][]byte) { c.w.Integer(int64(len(t))) }
}

func cmdCommandInfo(t table) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		if len(args) == 2 { // no names: every command, as COMMAND
			cmdCommand(t)(c, args)
			return
		}
		c.w.ArrayHeader(len(args) - 2)
		for _, name := range args[2:] {
			if cmd := t.lookup(name); cmd != nil {
				c.writeCommandInfo(cmd)
			} else {
				c.w.Null() // "$-1", as Redis
			}
		}
	}
}

func cmdCommandList(t table) func(c *conn, args [][]byte) {
	return func(c *conn, _ [][]byte) {
		cmds := t.sorted()
		c.w.ArrayHeader(len(cmds))
		for _, cmd := range cmds {
			c.w.BulkString(cmd.name)
		}
	}
}

// cmdCommandDocs answers COMMAND DOCS with no documentation: redis-cli
// then falls back to its built-in help.
func cmdCommandDocs(c *conn, _ [][]byte) {
	if c.w.Protocol() == 3 {
		c.w.MapHeader(0)
	} else {
		c.w.ArrayHeader(0)
	}
}
