package server

import (
	"errors"
	"strings"
)

// The BF.* commands, with RedisBloom's replies (docs/DESIGN.md §7).

func bloomCommands() []*command {
	k1 := [3]int{1, 1, 1}
	return []*command{
		{name: "bf.reserve", arity: -4, flags: flagWrite, keys: k1, run: cmdReserve},
		{name: "bf.add", arity: 3, flags: flagWrite | flagFast, keys: k1, run: cmdAdd},
		{name: "bf.madd", arity: -3, flags: flagWrite | flagFast, keys: k1, run: cmdMAdd},
		{name: "bf.insert", arity: -4, flags: flagWrite, keys: k1, run: cmdInsert},
		{name: "bf.exists", arity: 3, flags: flagReadonly | flagFast, keys: k1, run: cmdExists},
		{name: "bf.mexists", arity: -3, flags: flagReadonly | flagFast, keys: k1, run: cmdMExists},
		{name: "bf.info", arity: -2, flags: flagReadonly | flagFast, keys: k1, run: cmdInfo},
		{name: "bf.card", arity: 2, flags: flagReadonly | flagFast, keys: k1, run: cmdCard},
		{name: "bf.debug", arity: 2, flags: flagReadonly | flagFast, keys: k1, run: cmdDebug},
		{name: "bf.scandump", arity: 3, flags: flagReadonly, keys: k1, run: cmdScanDump, slow: always},
		{name: "bf.loadchunk", arity: 4, flags: flagWrite, keys: k1, run: cmdLoadChunk, slow: largeChunk},
	}
}

func cmdReserve(c *conn, args [][]byte) {
	if len(args) > 7 {
		c.error("ERR wrong number of arguments for 'bf.reserve' command")
		return
	}
	o, msg := parseReserve(args)
	if msg != "" {
		c.error(msg)
		return
	}
	if err := c.srv.bloom.Reserve(c.ctx, string(args[1]), o); err != nil {
		c.fail(err)
		return
	}
	c.ok()
}

func cmdAdd(c *conn, args [][]byte) {
	res := c.resultsFor(1)
	_, err := c.srv.bloom.Add(c.ctx, string(args[1]), args[2:3], c.defaultCreate(), res)
	c.addReply(res, err)
}

// addReply writes BF.ADD's reply: res[0], or err.
func (c *conn) addReply(res []addResult, err error) {
	if err != nil {
		c.fail(err)
		return
	}
	c.writeResults(res[:1])
}

func cmdMAdd(c *conn, args [][]byte) {
	c.addMany(string(args[1]), args[2:], c.defaultCreate())
}

func cmdInsert(c *conn, args [][]byte) {
	req, msg := parseInsert(args)
	switch msg {
	case "":
	case errArity:
		c.error("ERR wrong number of arguments for 'bf.insert' command")
		return
	default:
		c.error(msg)
		return
	}
	create := &req.create
	if req.noCreate {
		create = nil
	}
	c.addMany(string(args[1]), req.items, create)
}

// addMany adds items and writes RedisBloom's array: one 1/0 (or error)
// per item processed, then the error that stopped it (a full non-scaling
// filter), if any. An error before the first item (a missing key with
// NOCREATE) is the whole reply.
func (c *conn) addMany(key string, items [][]byte, create *createOpts) {
	res := c.resultsFor(len(items))
	n, err := c.srv.bloom.Add(c.ctx, key, items, create, res)
	c.addManyReply(res, n, err)
}

// addManyReply writes the array of addMany: the first n of res, then
// err if it is an item's, or err alone.
func (c *conn) addManyReply(res []addResult, n int, err error) {
	if err == nil {
		c.w.ArrayHeader(n)
		c.writeResults(res[:n])
		return
	}
	var stop itemError
	if !errors.As(err, &stop) {
		c.fail(err)
		return
	}
	c.w.ArrayHeader(n + 1)
	c.writeResults(res[:n])
	c.fail(stop.replyError)
}

// writeResults writes each of res as RedisBloom's 1 or 0 (or RESP3's
// booleans), or its error.
func (c *conn) writeResults(res []addResult) {
	for _, r := range res {
		if r == addFailed {
			c.fail(errCannotInsert)
		} else {
			c.w.Bool(r == addNew)
		}
	}
}

// writeBools writes each of bs as RedisBloom's 1 or 0 (or RESP3's booleans).
func (c *conn) writeBools(bs []bool) {
	for _, b := range bs {
		c.w.Bool(b)
	}
}

// defaultCreate returns the creation options of BF.ADD and BF.MADD, in
// the connection's scratch space (a local copy would escape to the heap
// through the backend interface: an allocation per command).
func (c *conn) defaultCreate() *createOpts {
	c.create = defaultCreate
	return &c.create
}

func cmdExists(c *conn, args [][]byte) {
	found := c.boolsFor(1)
	err := c.srv.bloom.Exists(c.ctx, string(args[1]), args[2:3], found)
	c.existsReply(found, false, err)
}

func cmdMExists(c *conn, args [][]byte) {
	found := c.boolsFor(len(args) - 2)
	err := c.srv.bloom.Exists(c.ctx, string(args[1]), args[2:], found)
	c.existsReply(found, true, err)
}

// existsReply writes BF.EXISTS's reply (found[0]) or BF.MEXISTS's (the
// array of found, multi), or err.
func (c *conn) existsReply(found []bool, multi bool, err error) {
	switch {
	case err != nil:
		c.fail(err)
	case multi:
		c.w.ArrayHeader(len(found))
		c.writeBools(found)
	default:
		c.w.Bool(found[0])
	}
}

// infoFields are BF.INFO's fields: the argument that selects one, and its
// name in the full reply.
var infoFields = []struct{ arg, name string }{
	{"CAPACITY", "Capacity"},
	{"SIZE", "Size"},
	{"FILTERS", "Number of filters"},
	{"ITEMS", "Number of items inserted"},
	{"EXPANSION", "Expansion rate"},
}

func cmdInfo(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.error("ERR wrong number of arguments for 'bf.info' command")
		return
	}
	in, err := c.srv.bloom.Info(c.ctx, string(args[1]))
	if err != nil {
		c.fail(err)
		return
	}
	if len(args) == 2 {
		if c.w.Protocol() == 3 {
			c.w.MapHeader(len(infoFields))
		} else {
			c.w.ArrayHeader(2 * len(infoFields))
		}
		for i, f := range infoFields {
			c.w.SimpleString(f.name)
			writeInfoValue(c, in, i)
		}
		return
	}
	for i, f := range infoFields {
		if strings.EqualFold(string(args[2]), f.arg) {
			// One field: a one-element array in RESP2, a one-entry map
			// with the field's name in RESP3.
			if c.w.Protocol() == 3 {
				c.w.MapHeader(1)
				c.w.SimpleString(f.name)
			} else {
				c.w.ArrayHeader(1)
			}
			writeInfoValue(c, in, i)
			return
		}
	}
	c.error("Invalid information value")
}

// writeInfoValue writes field i of infoFields.
func writeInfoValue(c *conn, in filterInfo, i int) {
	switch i {
	case 0:
		c.w.Integer(int64(in.Capacity))
	case 1:
		c.w.Integer(int64(in.Size))
	case 2:
		c.w.Integer(int64(in.Filters))
	case 3:
		c.w.Integer(int64(in.Items))
	default:
		if in.NonScaling {
			c.w.Null()
		} else {
			c.w.Integer(int64(in.Expansion))
		}
	}
}

func cmdCard(c *conn, args [][]byte) {
	n, err := c.srv.bloom.Card(c.ctx, string(args[1]))
	if err != nil {
		c.fail(err)
		return
	}
	c.w.Integer(int64(n))
}
