package redisfilter

import (
	"context"
	"fmt"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// A batch becomes, per key (shard), BITFIELD commands of at most
// MaxOpsPerCommand bit operations: "SET u1 <offset> 1" to add (the reply
// is the old bits), "GET u1 <offset>" with BITFIELD_RO to test. An item's
// k operations are never split over two commands, so each item changes
// atomically. All commands of up to MaxBatch items go in one pipeline:
// go-redis sends it as one round trip per node.

// command is one BITFIELD command under construction.
type command struct {
	key   int // index in bitBatch.keys
	args  []any
	items []int // the items whose operations it holds, in order
	cmd   *redis.IntSliceCmd
}

// bitBatch runs one batch of per-item bit operations over some keys: the
// machinery shared by Filter and GoZeroFilter.
type bitBatch struct {
	client redis.UniversalClient
	name   string   // the filter's name, for errors
	keys   []string // the keys holding the bits (shards)
	k      int      // bit operations per item, all in one key
	add    bool     // set the bits (reply: the old bits) or read them
}

// run answers n items. locate(i, dst) appends item i's k bit offsets,
// local to their key, to dst (empty, with room for k) and returns the
// key's index; it must not keep dst.
func (b bitBatch) run(ctx context.Context, n int, locate func(i int, dst []uint64) (int, []uint64)) ([]bool, error) {
	out := make([]bool, n)
	for lo := 0; lo < n; lo += MaxBatch {
		if err := b.runChunk(ctx, lo, min(lo+MaxBatch, n), out, locate); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MaxBatch is the most items a batch sends in one round trip; larger
// batches take several, so that no request outgrows the client's write
// timeout or Redis's query buffer (a thousand items at k = 7 are about
// 64 KiB of commands).
const MaxBatch = 16384

// runChunk answers items [lo, hi) into out, in one pipeline. The offsets
// live in one slice for the whole chunk and the arguments point into it
// (go-redis writes a *uint64 as the number), so that no offset is boxed
// into an interface of its own: that allocation was a third of the
// client's time per item.
func (b bitBatch) runChunk(ctx context.Context, lo, hi int, out []bool, locate func(i int, dst []uint64) (int, []uint64)) error {
	n := hi - lo
	k, add := b.k, b.add
	var name, op any = "BITFIELD_RO", "GET" // boxed once, not per operation
	if add {
		name, op = "BITFIELD", "SET"
	}
	perCmd := max(1, MaxOpsPerCommand/k)
	open := map[int]*command{} // the command being filled, per key
	var cmds []*command
	offs := make([]uint64, 0, n*k) // never grows: args point into it
	for i := lo; i < hi; i++ {
		var key int
		mine := offs[len(offs) : len(offs) : len(offs)+k]
		key, mine = locate(i, mine)
		offs = offs[:len(offs)+k]
		c := open[key]
		if c == nil || len(c.items) == perCmd {
			c = &command{key: key, args: make([]any, 0, 2+min(n, perCmd)*k*(3+b2i(add)))}
			c.args = append(c.args, name, &b.keys[key])
			open[key] = c
			cmds = append(cmds, c)
		}
		for j := range mine {
			c.args = append(c.args, op, "u1", &mine[j])
			if add {
				c.args = append(c.args, "1")
			}
		}
		c.items = append(c.items, i)
	}
	_, err := b.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range cmds {
			c.cmd = redis.NewIntSliceCmd(ctx, c.args...)
			_ = p.Process(ctx, c.cmd)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisfilter: %s %q: %w", verb(add), b.name, err)
	}
	for _, c := range cmds {
		bits := c.cmd.Val()
		if len(bits) != len(c.items)*k {
			return fmt.Errorf("redisfilter: %s %q: reply of %d bits for %d items", verb(add), b.name, len(bits), len(c.items))
		}
		for j, i := range c.items {
			seg := bits[j*k : (j+1)*k]
			if add {
				out[i] = anyZero(seg)
			} else {
				out[i] = !anyZero(seg)
			}
		}
	}
	return nil
}

func (f *Filter) run(ctx context.Context, items [][]byte, add bool) ([]bool, error) {
	if len(items) == 0 {
		return []bool{}, nil
	}
	m := f.current(ctx)
	if !add && m.Sizing.Layout == bloom.Blocked {
		return f.existsBlocked(ctx, m, items)
	}
	b := bitBatch{client: f.client, name: f.name, keys: m.Shards, k: int(m.Sizing.K), add: add}
	return b.run(ctx, len(items), func(i int, offs []uint64) (int, []uint64) {
		offs = m.Sizing.Offsets(f.hash(items[i]), offs)
		shard, _ := m.locate(offs[0])
		for j, o := range offs {
			_, offs[j] = m.locate(o)
		}
		return shard, offs
	})
}

// first is a one-item batch's answer.
func first(r []bool, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	return r[0], nil
}

func anyZero(bits []int64) bool {
	for _, b := range bits {
		if b == 0 {
			return true
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func verb(add bool) string {
	if add {
		return "add to"
	}
	return "test"
}
