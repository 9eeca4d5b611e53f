package server

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Generic key commands: EXISTS, DEL, UNLINK, TYPE, KEYS, SCAN, RENAME,
// the EXPIRE family, DBSIZE, FLUSHDB and FLUSHALL.

func keyCommands() []*command {
	all := [3]int{1, -1, 1}
	k1 := [3]int{1, 1, 1}
	expire := func(name string, unit, base int64) *command {
		return &command{name: name, arity: -3, flags: flagWrite | flagFast, keys: k1,
			run: func(c *conn, args [][]byte) { cmdExpire(c, args, name, unit, base) }}
	}
	return []*command{
		{name: "exists", arity: -2, flags: flagReadonly | flagFast, keys: all, run: cmdExistsKeys},
		{name: "del", arity: -2, flags: flagWrite, keys: all, run: cmdDel},
		{name: "unlink", arity: -2, flags: flagWrite | flagFast, keys: all, run: cmdDel},
		{name: "type", arity: 2, flags: flagReadonly | flagFast, keys: k1, run: cmdType},
		{name: "keys", arity: 2, flags: flagReadonly, run: cmdKeys, slow: always},
		{name: "scan", arity: -2, flags: flagReadonly, run: cmdScan, slow: largeScan},
		{name: "rename", arity: 3, flags: flagWrite, keys: [3]int{1, 2, 1}, run: cmdRename},
		expire("expire", 1000, 0),
		expire("pexpire", 1, 0),
		expire("expireat", 1000, -1),
		expire("pexpireat", 1, -1),
		{name: "ttl", arity: 2, flags: flagReadonly | flagFast, keys: k1, run: func(c *conn, args [][]byte) { cmdTTL(c, args, 1000, false) }},
		{name: "pttl", arity: 2, flags: flagReadonly | flagFast, keys: k1, run: func(c *conn, args [][]byte) { cmdTTL(c, args, 1, false) }},
		{name: "expiretime", arity: 2, flags: flagReadonly | flagFast, keys: k1, run: func(c *conn, args [][]byte) { cmdTTL(c, args, 1000, true) }},
		{name: "pexpiretime", arity: 2, flags: flagReadonly | flagFast, keys: k1, run: func(c *conn, args [][]byte) { cmdTTL(c, args, 1, true) }},
		{name: "persist", arity: 2, flags: flagWrite | flagFast, keys: k1, run: cmdPersist},
		{name: "dbsize", arity: 1, flags: flagReadonly | flagFast, run: cmdDBSize},
		{name: "flushdb", arity: -1, flags: flagWrite | flagAllKeys, run: cmdFlush, slow: always},
		{name: "flushall", arity: -1, flags: flagWrite | flagAllKeys, run: cmdFlush, slow: always},
	}
}

func cmdExistsKeys(c *conn, args [][]byte) {
	n, err := c.srv.keys.CountExisting(c.ctx, keyStrings(args[1:]))
	if err != nil {
		c.fail(err)
		return
	}
	c.w.Integer(int64(n))
}

func cmdDel(c *conn, args [][]byte) {
	n, err := c.srv.keys.Delete(c.ctx, keyStrings(args[1:]))
	if err != nil {
		c.fail(err)
		return
	}
	c.w.Integer(int64(n))
}

func cmdType(c *conn, args [][]byte) {
	t, err := c.srv.keys.Type(c.ctx, string(args[1]))
	if err != nil {
		c.fail(err)
		return
	}
	c.w.SimpleString(t)
}

// workBatch is the work (slots a Scan visits) between two checks that
// the client is still there, in KEYS and in SCAN with a large COUNT.
const workBatch = 1000

// errClientGone answers a long command whose client closed its end.
const errClientGone = "ERR the client closed the connection; command stopped"

// cmdKeys is KEYS: a scan of the whole keyspace in batches of workBatch,
// each holding one shard's lock, so other clients run between batches; it
// stops when the client has gone.
func cmdKeys(c *conn, args [][]byte) {
	pattern := string(args[1])
	if pattern == "*" {
		pattern = ""
	}
	var keys []string
	for cursor := uint64(0); ; {
		next, batch, err := c.srv.keys.Scan(c.ctx, cursor, pattern, workBatch)
		if err != nil {
			c.fail(err)
			return
		}
		keys = append(keys, batch...)
		if cursor = next; cursor == 0 {
			break
		}
		if c.peerGone() {
			c.error(errClientGone)
			return
		}
	}
	c.w.ArrayHeader(len(keys))
	for _, k := range keys {
		c.w.BulkString(k)
	}
}

// largeScan is SCAN's slow predicate: a COUNT of more than one batch of
// work.
func largeScan(args [][]byte) bool {
	for i := 2; i+1 < len(args); i += 2 {
		if n, ok := parseInt(args[i+1]); ok && n > workBatch && strings.EqualFold(string(args[i]), "COUNT") {
			return true
		}
	}
	return false
}

func cmdScan(c *conn, args [][]byte) {
	cursor, ok := parseCursor(args[1])
	if !ok {
		c.error("ERR invalid cursor")
		return
	}
	pattern, count, typ := "", 10, ""
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.error("ERR syntax error")
			return
		}
		switch strings.ToUpper(string(args[i])) {
		case "MATCH":
			pattern = string(args[i+1])
			if pattern == "*" {
				pattern = ""
			}
		case "COUNT":
			n, ok := parseInt(args[i+1])
			if !ok {
				c.error("ERR value is not an integer or out of range")
				return
			}
			if n < 1 {
				c.error("ERR syntax error")
				return
			}
			count = int(min(n, math.MaxInt32))
		case "TYPE":
			typ = string(args[i+1])
		default:
			c.error("ERR syntax error")
			return
		}
	}
	next, keys, gone, err := scanWork(c, cursor, pattern, count)
	if err != nil {
		c.fail(err)
		return
	}
	if gone {
		c.error(errClientGone)
		return
	}
	if typ != "" {
		if keys, err = keysOfType(c, keys, typ); err != nil {
			c.fail(err)
			return
		}
	}
	c.w.ArrayHeader(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.ArrayHeader(len(keys))
	for _, k := range keys {
		c.w.BulkString(k)
	}
}

// keysOfType keeps the keys of SCAN's TYPE typ (case-insensitive, as
// Redis): every key is a Bloom filter or a cuckoo filter.
func keysOfType(c *conn, keys []string, typ string) ([]string, error) {
	if !strings.EqualFold(typ, typeName) && !strings.EqualFold(typ, typeNameCuckoo) {
		return nil, nil
	}
	kept := keys[:0]
	for _, k := range keys {
		t, err := c.srv.keys.Type(c.ctx, k)
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(t, typ) {
			kept = append(kept, k)
		}
	}
	return kept, nil
}

// scanWork is one SCAN call of count work, done workBatch at a time so
// that a large COUNT stops early when the client has gone.
func scanWork(c *conn, cursor uint64, pattern string, count int) (next uint64, keys []string, gone bool, err error) {
	for {
		n := min(count, workBatch)
		next, batch, err := c.srv.keys.Scan(c.ctx, cursor, pattern, n)
		if err != nil {
			return 0, nil, false, err
		}
		keys = append(keys, batch...)
		if cursor, count = next, count-n; cursor == 0 || count == 0 {
			return cursor, keys, false, nil
		}
		if c.peerGone() {
			return 0, nil, true, nil
		}
	}
}

// parseCursor parses SCAN's cursor as Redis 7.0 does, with C's strtoul:
// no leading space, an optional sign, decimal digits within 64 bits; a
// '-' wraps around ("-1" is the largest cursor, which ends a scan) and
// "" is 0.
func parseCursor(b []byte) (uint64, bool) {
	s := string(b)
	if s == "" {
		return 0, true
	}
	neg := s[0] == '-'
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

func cmdRename(c *conn, args [][]byte) {
	if err := c.srv.keys.Rename(c.ctx, string(args[1]), string(args[2])); err != nil {
		c.fail(err)
		return
	}
	c.ok()
}

// cmdExpire is EXPIRE, PEXPIRE (base 0: relative to now) and EXPIREAT,
// PEXPIREAT (base -1: absolute), with unit ms per unit of the argument.
func cmdExpire(c *conn, args [][]byte, name string, unit, base int64) {
	n, ok := parseInt(args[2])
	if !ok {
		c.error("ERR value is not an integer or out of range")
		return
	}
	cond, msg := parseExpireCond(args[3:])
	if msg != "" {
		c.error(msg)
		return
	}
	if base == 0 {
		base = time.Now().UnixMilli()
	} else {
		base = 0
	}
	// Redis's checks: the product must fit, and so must a positive sum
	// (a negative sum cannot overflow: base ≥ 0). A time far in the past
	// is not an error; it deletes the key.
	if n > math.MaxInt64/unit || n < math.MinInt64/unit || n*unit > math.MaxInt64-base {
		c.error("ERR invalid expire time in '" + name + "' command")
		return
	}
	done, err := c.srv.keys.PExpireAt(c.ctx, string(args[1]), base+n*unit, cond)
	if err != nil {
		c.fail(err)
		return
	}
	c.w.Integer(b2i(done))
}

// parseExpireCond parses EXPIRE's NX, XX, GT and LT options.
func parseExpireCond(opts [][]byte) (expireCond, string) {
	var nx, xx, gt, lt bool
	for _, o := range opts {
		switch strings.ToUpper(string(o)) {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "GT":
			gt = true
		case "LT":
			lt = true
		default:
			return 0, "ERR Unsupported option " + string(o)
		}
	}
	switch {
	case nx && (xx || gt || lt):
		return 0, "ERR NX and XX, GT or LT options at the same time are not compatible"
	case gt && lt:
		return 0, "ERR GT and LT options at the same time are not compatible"
	case nx:
		return expireNX, ""
	case gt:
		return expireGT, ""
	case lt:
		return expireLT, ""
	case xx:
		return expireXX, ""
	}
	return expireAlways, ""
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// cmdTTL is TTL and PTTL (absolute false) or EXPIRETIME and PEXPIRETIME.
func cmdTTL(c *conn, args [][]byte, unit int64, absolute bool) {
	var v int64
	var err error
	if absolute {
		v, err = c.srv.keys.ExpireTime(c.ctx, string(args[1]))
	} else {
		v, err = c.srv.keys.PTTL(c.ctx, string(args[1]))
	}
	if err != nil {
		c.fail(err)
		return
	}
	switch {
	case v < 0 || unit == 1:
	case absolute:
		v /= unit // EXPIRETIME truncates
	default:
		v = (v + unit/2) / unit // TTL rounds to the nearest second
	}
	c.w.Integer(v)
}

func cmdPersist(c *conn, args [][]byte) {
	done, err := c.srv.keys.Persist(c.ctx, string(args[1]))
	if err != nil {
		c.fail(err)
		return
	}
	c.w.Integer(b2i(done))
}

func cmdDBSize(c *conn, _ [][]byte) {
	n, err := c.srv.keys.DBSize(c.ctx)
	if err != nil {
		c.fail(err)
		return
	}
	c.w.Integer(n)
}

func cmdFlush(c *conn, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !strings.EqualFold(string(args[1]), "ASYNC") && !strings.EqualFold(string(args[1]), "SYNC")) {
		c.error("ERR syntax error")
		return
	}
	if err := c.srv.keys.Flush(c.ctx); err != nil {
		c.fail(err)
		return
	}
	c.ok()
}

// keyStrings copies arguments into strings.
func keyStrings(args [][]byte) []string {
	keys := make([]string, len(args))
	for i, a := range args {
		keys[i] = string(a)
	}
	return keys
}
