package server

import (
	"context"
	"strconv"
)

// The BF.* commands that show a filter's insides: BF.DEBUG (its
// sub-filters) and BF.SCANDUMP and BF.LOADCHUNK (its dump, chunk by
// chunk), with RedisBloom's replies.

// cmdDebug answers RedisBloom's BF.DEBUG with the filter's own geometry:
// "size:<items>", then per sub-filter, the oldest first, "bytes:B bits:b
// hashes:k hashwidth:w capacity:n size:items ratio:p", p as C's %g.
func cmdDebug(c *conn, args [][]byte) {
	d, err := c.srv.bloom.Debug(c.ctx, string(args[1]))
	if err != nil {
		c.fail(err)
		return
	}
	c.w.ArrayHeader(1 + len(d.Subs))
	c.w.Bulk(strconv.AppendUint([]byte("size:"), d.Items, 10))
	for _, s := range d.Subs {
		b := strconv.AppendUint([]byte("bytes:"), s.Bytes, 10)
		b = strconv.AppendUint(append(b, " bits:"...), s.Bits, 10)
		b = strconv.AppendUint(append(b, " hashes:"...), uint64(s.Hashes), 10)
		b = strconv.AppendInt(append(b, " hashwidth:"...), int64(s.HashWidth), 10)
		b = strconv.AppendUint(append(b, " capacity:"...), s.Capacity, 10)
		b = strconv.AppendUint(append(b, " size:"...), s.Items, 10)
		b = strconv.AppendFloat(append(b, " ratio:"...), s.Rate, 'g', 6, 64)
		c.w.Bulk(b)
	}
}

func cmdScanDump(c *conn, args [][]byte) {
	key := string(args[1])
	iter, ok := parseInt(args[2])
	if !ok {
		// RedisBloom looks the key up first.
		if _, err := c.srv.bloom.Info(c.ctx, key); err != nil {
			c.fail(err)
			return
		}
		c.error("Second argument must be numeric")
		return
	}
	next, chunk, err := c.srv.bloom.ScanDump(c.ctx, key, iter)
	c.writeChunk(next, chunk, err, false)
}

// writeChunk writes a SCANDUMP's reply, [next, chunk], or err. A nil
// chunk (the end) is a null with nullEnd (CF.SCANDUMP), else an empty
// string (BF.SCANDUMP).
func (c *conn) writeChunk(next int64, chunk []byte, err error, nullEnd bool) {
	if err != nil {
		c.fail(err)
		return
	}
	c.w.ArrayHeader(2)
	c.w.Integer(next)
	switch {
	case chunk != nil:
		c.w.Bulk(chunk)
	case nullEnd:
		c.w.Null()
	default:
		c.w.Bulk([]byte{})
	}
}

// largeChunk is BF.LOADCHUNK's slow predicate: a chunk over 64 KiB (a
// chunk goes up to 16 MiB, copied and checked).
func largeChunk(args [][]byte) bool { return len(args[3]) > 64<<10 }

func cmdLoadChunk(c *conn, args [][]byte) {
	loadChunk(c, args, "ERR Second argument must be numeric", func(int64) bool { return true }, c.srv.bloom.LoadChunk)
}

// loadChunk runs a LOADCHUNK key iter data: an iterator that does not
// parse, or that valid refuses, answers badIter; else load's answer.
func loadChunk(c *conn, args [][]byte, badIter string, valid func(int64) bool,
	load func(ctx context.Context, key string, iter int64, chunk []byte) error) {
	iter, ok := parseInt(args[2])
	if !ok || !valid(iter) {
		c.error(badIter)
		return
	}
	if err := load(c.ctx, string(args[1]), iter, args[3]); err != nil {
		c.fail(err)
		return
	}
	c.ok()
}
