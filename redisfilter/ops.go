package redisfilter

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// A batch becomes, per shard, BITFIELD commands of at most
// MaxOpsPerCommand bit operations: "SET u1 <offset> 1" to add (the reply
// is the old bits), "GET u1 <offset>" with BITFIELD_RO to test. An item's
// k operations are never split over two commands, so each item changes
// atomically. All commands go in one pipeline: go-redis sends it as one
// round trip per node.

// command is one BITFIELD command under construction.
type command struct {
	shard int
	args  []any
	items []int // the items whose operations it holds, in order
	cmd   *redis.Cmd
}

func (f *Filter) run(ctx context.Context, items [][]byte, add bool) ([]bool, error) {
	out := make([]bool, len(items))
	if len(items) == 0 {
		return out, nil
	}
	m := f.current(ctx)
	k := int(m.Sizing.K)
	name, op := "BITFIELD_RO", "GET"
	if add {
		name, op = "BITFIELD", "SET"
	}
	perCmd := max(1, MaxOpsPerCommand/k)
	open := map[int]*command{} // the command being filled, per shard
	var cmds []*command
	offs := make([]uint64, 0, k)
	for i, item := range items {
		offs = m.Sizing.Offsets(f.hash(item), offs[:0])
		shard, _ := m.locate(offs[0])
		c := open[shard]
		if c == nil || len(c.items) == perCmd {
			c = &command{shard: shard, args: make([]any, 0, 2+min(len(items), perCmd)*k*(3+b2i(add)))}
			c.args = append(c.args, name, m.Shards[shard])
			open[shard] = c
			cmds = append(cmds, c)
		}
		for _, o := range offs {
			_, local := m.locate(o)
			c.args = append(c.args, op, "u1", strconv.FormatUint(local, 10))
			if add {
				c.args = append(c.args, "1")
			}
		}
		c.items = append(c.items, i)
	}
	_, err := f.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range cmds {
			c.cmd = p.Do(ctx, c.args...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redisfilter: %s %q: %w", verb(add), f.name, err)
	}
	for _, c := range cmds {
		bits, err := c.cmd.Int64Slice()
		if err != nil || len(bits) != len(c.items)*k {
			return nil, fmt.Errorf("redisfilter: %s %q: reply of %d bits for %d items: %v", verb(add), f.name, len(bits), len(c.items), err)
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
	return out, nil
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
