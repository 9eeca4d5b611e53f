package server

import (
	"strconv"

	"github.com/bloomery/bloom/cuckoo"
)

// The CF.* commands, cuckoo filters, with RedisBloom 8's replies, check
// orders and error texts in RESP2 and RESP3 (docs/SERVER.md, "Cuckoo
// filters"). The dumps are in cmd_cuckoo_dump.go, the parsing in
// cmd_cuckoo_parse.go.

func cuckooCommands() []*command {
	k1 := [3]int{1, 1, 1}
	return []*command{
		{name: "cf.reserve", arity: -3, flags: flagWrite, keys: k1, run: withCuckoo(cmdCFReserve)},
		{name: "cf.add", arity: 3, flags: flagWrite, keys: k1, run: withCuckoo(cmdCFAdd)},
		{name: "cf.addnx", arity: 3, flags: flagWrite, keys: k1, run: withCuckoo(cmdCFAdd)},
		{name: "cf.insert", arity: -4, flags: flagWrite, keys: k1, run: withCuckoo(cmdCFInsert)},
		{name: "cf.insertnx", arity: -4, flags: flagWrite, keys: k1, run: withCuckoo(cmdCFInsert)},
		{name: "cf.exists", arity: 3, flags: flagReadonly | flagFast, keys: k1, run: withCuckoo(cmdCFExists)},
		{name: "cf.mexists", arity: -3, flags: flagReadonly | flagFast, keys: k1, run: withCuckoo(cmdCFExists)},
		{name: "cf.count", arity: 3, flags: flagReadonly | flagFast, keys: k1, run: withCuckoo(cmdCFCount)},
		{name: "cf.del", arity: 3, flags: flagWrite | flagFast, keys: k1, run: withCuckoo(cmdCFDel)},
		// RedisBloom flags CF.COMPACT read-only; it changes the filter,
		// and is journaled, so it is a write here.
		{name: "cf.compact", arity: 2, flags: flagWrite | flagFast, keys: k1, run: withCuckoo(cmdCFCompact)},
		{name: "cf.info", arity: 2, flags: flagReadonly | flagFast, keys: k1, run: withCuckoo(cmdCFInfo)},
		{name: "cf.debug", arity: 2, flags: flagReadonly | flagFast, keys: k1, run: withCuckoo(cmdCFDebug)},
		{name: "cf.scandump", arity: 3, flags: flagReadonly, keys: k1, run: withCuckoo(cmdCFScanDump), slow: always},
		{name: "cf.loadchunk", arity: 4, flags: flagWrite, keys: k1, run: withCuckoo(cmdCFLoadChunk), slow: largeChunk},
	}
}

// withCuckoo runs a CF.* command on a backend that has cuckoo filters,
// and answers errNotSupported on one that has not.
func withCuckoo(run func(c *conn, args [][]byte)) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		if c.srv.cuckoo == nil {
			c.fail(errNotSupported)
			return
		}
		run(c, args)
	}
}

// isNX tells CF.ADDNX and CF.INSERTNX from CF.ADD and CF.INSERT by the
// last letter of the name, as RedisBloom does.
func isNX(name []byte) bool { return lower(name, len(name)-1) == 'x' }

func cmdCFReserve(c *conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.error("ERR wrong number of arguments for 'cf.reserve' command")
		return
	}
	o, msg := parseCFReserve(args)
	if msg != "" {
		c.error(msg)
		return
	}
	if err := c.srv.cuckoo.Reserve(c.ctx, c.filterKey(args[1]), o); err != nil {
		c.fail(err)
		return
	}
	c.ok()
}

// cfAdd runs an add of items and returns each one's outcome, in the
// connection's scratch space; ok false when the whole reply was an error
// (written).
func (c *conn) cfAdd(key string, items [][]byte, a cuckooAdd) ([]cuckoo.Status, bool) {
	if cap(c.cfRes) < len(items) {
		c.cfRes = make([]cuckoo.Status, len(items))
	}
	res := c.cfRes[:len(items)]
	if err := c.srv.cuckoo.Add(c.ctx, key, items, a, res); err != nil {
		c.fail(err)
		return nil, false
	}
	return res, true
}

// cmdCFAdd is CF.ADD and CF.ADDNX: a boolean, or the error of an item
// that found no room.
func cmdCFAdd(c *conn, args [][]byte) {
	c.cfCreate = defaultCuckoo
	res, ok := c.cfAdd(c.filterKey(args[1]), args[2:3], cuckooAdd{nx: isNX(args[0]), create: &c.cfCreate})
	if ok {
		c.cfAddReply(res[0])
	}
}

// cfAddReply answers a CF.ADD or CF.ADDNX whose item had the outcome st.
func (c *conn) cfAddReply(st cuckoo.Status) {
	switch st {
	case cuckoo.NoSpace:
		c.fail(errCFFull)
	case cuckoo.GrowFailed:
		c.fail(errCFGrow)
	default:
		c.w.Bool(st == cuckoo.Inserted)
	}
}

// cmdCFInsert is CF.INSERT and CF.INSERTNX: one reply per item. CF.INSERT
// answers 1 or -1 (RESP3: true or false); CF.INSERTNX 1, 0 or -1 in both
// protocols, as RedisBloom.
func cmdCFInsert(c *conn, args [][]byte) {
	req, msg := parseCFInsert(args)
	switch msg {
	case "":
	case errArity:
		c.error("ERR wrong number of arguments for '" + lowerName(args[0]) + "' command")
		return
	default:
		c.error(msg)
		return
	}
	a := cuckooAdd{nx: isNX(args[0])}
	if !req.noCreate {
		c.cfCreate = defaultCuckoo
		c.cfCreate.capacity = req.capacity
		a.create = &c.cfCreate
	}
	res, ok := c.cfAdd(c.filterKey(args[1]), req.items, a)
	if !ok {
		return
	}
	c.w.ArrayHeader(len(res))
	for _, st := range res {
		switch {
		case a.nx:
			c.w.Integer(int64(max(st, cuckoo.NoSpace)))
		case st == cuckoo.Inserted:
			c.w.Bool(true)
		case c.w.Protocol() == 3:
			c.w.Bool(false)
		default:
			c.w.Integer(-1)
		}
	}
}

// lowerName is a command's name in lower case, as error texts give it.
func lowerName(name []byte) string {
	b := make([]byte, len(name))
	for i := range name {
		b[i] = lower(name, i)
	}
	return string(b)
}

// cmdCFExists is CF.EXISTS and CF.MEXISTS (RedisBloom tells them apart
// by the name's fourth letter). Their replies are BF.EXISTS's and
// BF.MEXISTS's.
func cmdCFExists(c *conn, args [][]byte) {
	found := c.boolsFor(len(args) - 2)
	err := c.srv.cuckoo.Exists(c.ctx, c.filterKey(args[1]), args[2:], found)
	c.existsReply(found, lower(args[0], 3) == 'm', err)
}

func cmdCFCount(c *conn, args [][]byte) {
	n, err := c.srv.cuckoo.Count(c.ctx, c.filterKey(args[1]), args[2])
	if err != nil {
		c.fail(err)
		return
	}
	c.w.Integer(int64(n))
}

func cmdCFDel(c *conn, args [][]byte) {
	deleted, err := c.srv.cuckoo.Delete(c.ctx, c.filterKey(args[1]), args[2])
	if err != nil {
		c.fail(err)
		return
	}
	c.w.Bool(deleted)
}

func cmdCFCompact(c *conn, args [][]byte) {
	if err := c.srv.cuckoo.Compact(c.ctx, c.filterKey(args[1])); err != nil {
		c.fail(err)
		return
	}
	c.ok()
}

// cfInfoFields are CF.INFO's fields, in its order.
var cfInfoFields = [...]string{"Size", "Number of buckets", "Number of filters", "Number of items inserted",
	"Number of items deleted", "Bucket size", "Expansion rate", "Max iterations"}

// cmdCFInfo answers CF.INFO: names and integers, a flat array in RESP2,
// a map in RESP3.
func cmdCFInfo(c *conn, args [][]byte) {
	in, err := c.srv.cuckoo.Info(c.ctx, c.filterKey(args[1]))
	if err != nil {
		c.fail(err)
		return
	}
	vals := [...]uint64{in.Size, in.Buckets, in.Filters, in.Items, in.Deleted, in.BucketSize, in.Expansion, in.MaxIterations}
	if c.w.Protocol() == 3 {
		c.w.MapHeader(len(cfInfoFields))
	} else {
		c.w.ArrayHeader(2 * len(cfInfoFields))
	}
	for i, name := range cfInfoFields {
		c.w.SimpleString(name)
		c.w.Integer(int64(vals[i]))
	}
}

// cmdCFDebug answers CF.DEBUG: one line, "bktsize:B buckets:N items:I
// deletes:D filters:F max_iterations:M expansion:E".
func cmdCFDebug(c *conn, args [][]byte) {
	in, err := c.srv.cuckoo.Info(c.ctx, c.filterKey(args[1]))
	if err != nil {
		c.fail(err)
		return
	}
	b := strconv.AppendUint([]byte("bktsize:"), in.BucketSize, 10)
	b = strconv.AppendUint(append(b, " buckets:"...), in.Buckets, 10)
	b = strconv.AppendUint(append(b, " items:"...), in.Items, 10)
	b = strconv.AppendUint(append(b, " deletes:"...), in.Deleted, 10)
	b = strconv.AppendUint(append(b, " filters:"...), in.Filters, 10)
	b = strconv.AppendUint(append(b, " max_iterations:"...), in.MaxIterations, 10)
	b = strconv.AppendUint(append(b, " expansion:"...), in.Expansion, 10)
	c.w.Bulk(b)
}

func cmdCFScanDump(c *conn, args [][]byte) {
	iter, ok := parseInt(args[2])
	if !ok || iter < 0 {
		c.error("Invalid position")
		return
	}
	next, chunk, err := c.srv.cuckoo.ScanDump(c.ctx, c.filterKey(args[1]), iter)
	c.writeChunk(next, chunk, err, true)
}

// cmdCFLoadChunk: an iterator that does not parse, or 0, is refused
// before the key is looked at.
func cmdCFLoadChunk(c *conn, args [][]byte) {
	loadChunk(c, args, "Invalid position", func(it int64) bool { return it != 0 }, c.srv.cuckoo.LoadChunk)
}
