package redisfilter

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// Reads of a blocked filter. All k bits of an item lie in one 64-byte
// block, so ExistsMany reads the blocks a batch touches with GETRANGE and
// tests the bits in the client: 4 arguments and a 64-byte reply per block
// instead of a BITFIELD_RO of k "GET u1 <offset>" operations (3k
// arguments, which cost Redis about three times the CPU to parse; the
// figures are in docs/BENCHMARKS.md). The items are sorted by block, so a
// block two items share is read once and blocks at most mergeGap bytes
// apart are read by one GETRANGE. A GETRANGE is a single read of one key:
// it sees a block as it was between two writes, and each write sets all
// of an item's bits at once (one BITFIELD), so no reader sees half an
// item. All GETRANGEs of up to MaxBatch items go in one pipeline: one
// round trip per node.

// mergeGap is the most bytes between two blocks that one GETRANGE reads
// over rather than split in two: a command costs Redis about as much as
// copying a few hundred bytes more.
const mergeGap = 192

// A ref is one item of a batch, packed for sorting: its block's place in
// the high bits (shard << 23 | block index in the shard: a shard of at most
// 512 MiB has 2²³ blocks, and there are at most 2¹⁶ shards) and its index
// in the chunk (below MaxBatch = 2¹⁴) in the low refItemBits.
const (
	refItemBits  = 14
	refShardBits = 23 // a shard's block index
)

// A chunk's item index must fit refItemBits.
var _ [1<<refItemBits - MaxBatch]struct{}

func blockOf(ref uint64) (shard int, block uint64) {
	b := ref >> refItemBits
	return int(b >> refShardBits), b & (1<<refShardBits - 1)
}

// blockRange is one GETRANGE: blocks first … last of a shard, holding the
// items refs[from:to] of the sorted batch.
type blockRange struct {
	shard       int
	first, last uint64 // block indices in the shard
	from, to    int
	cmd         *redis.StringCmd
}

// blockReader answers one chunk of a batch of reads.
type blockReader struct {
	m     *Meta
	k     int
	refs  []uint64 // sorted
	pos   []uint16 // item i's in-block bit offsets (SETBIT numbering): pos[i*k:(i+1)*k]
	spans []blockRange
	args  []any   // the GETRANGEs' arguments, 4 per range
	ends  []int64 // their start and end bytes, pointed to by args (no boxing)
}

// readers keeps blockReaders' buffers between calls.
var readers = sync.Pool{New: func() any { return new(blockReader) }}

// existsBlocked answers ExistsMany for a blocked filter.
func (f *Filter) existsBlocked(ctx context.Context, m *Meta, items [][]byte) ([]bool, error) {
	out := make([]bool, len(items))
	r := readers.Get().(*blockReader)
	defer func() {
		clear(r.spans[:cap(r.spans)]) // the replies
		r.m = nil
		readers.Put(r)
	}()
	r.m, r.k = m, int(m.Sizing.K)
	for lo := 0; lo < len(items); lo += MaxBatch {
		hi := min(lo+MaxBatch, len(items))
		r.locate(items[lo:hi], f.hash)
		if err := r.read(ctx, f.client); err != nil {
			return nil, fmt.Errorf("redisfilter: test %q: %w", f.name, err)
		}
		r.answer(out[lo:hi])
	}
	return out, nil
}

// locate fills refs and pos for items, sorted by block.
func (r *blockReader) locate(items [][]byte, hash func([]byte) bloom.Hash) {
	r.refs = slices.Grow(r.refs[:0], len(items))
	r.pos = slices.Grow(r.pos[:0], len(items)*r.k)
	offs := make([]uint64, 0, r.k)
	for i, it := range items {
		offs = r.m.Sizing.Offsets(hash(it), offs[:0])
		shard, local := r.m.locate(offs[0])
		r.refs = append(r.refs, (uint64(shard)<<refShardBits|local/bloom.BlockBits)<<refItemBits|uint64(i))
		for _, o := range offs {
			r.pos = append(r.pos, uint16(o%bloom.BlockBits))
		}
	}
	slices.Sort(r.refs)
}

// read sends one GETRANGE per run of nearby blocks, in one pipeline.
func (r *blockReader) read(ctx context.Context, client redis.UniversalClient) error {
	r.spans = r.spans[:0]
	const gapBlocks = mergeGap / 64
	for j, ref := range r.refs {
		shard, b := blockOf(ref)
		if n := len(r.spans); n > 0 && r.spans[n-1].shard == shard && b <= r.spans[n-1].last+1+gapBlocks {
			r.spans[n-1].last, r.spans[n-1].to = b, j+1
			continue
		}
		r.spans = append(r.spans, blockRange{shard: shard, first: b, last: b, from: j, to: j + 1})
	}
	r.args = slices.Grow(r.args[:0], 4*len(r.spans))[:4*len(r.spans)]
	r.ends = slices.Grow(r.ends[:0], 2*len(r.spans))[:2*len(r.spans)]
	_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range r.spans {
			s := &r.spans[i]
			r.ends[2*i], r.ends[2*i+1] = int64(s.first*64), int64(s.last*64+63)
			a := r.args[4*i : 4*i+4 : 4*i+4]
			a[0], a[1], a[2], a[3] = "GETRANGE", &r.m.Shards[s.shard], &r.ends[2*i], &r.ends[2*i+1]
			s.cmd = redis.NewStringCmd(ctx, a...)
			_ = p.Process(ctx, s.cmd)
		}
		return nil
	})
	return err
}

// answer tests each item's bits in the blocks read. Bytes past the end of
// a reply were never written (a missing key reads as ""): zeros.
func (r *blockReader) answer(out []bool) {
	for _, s := range r.spans {
		data := s.cmd.Val()
		for _, ref := range r.refs[s.from:s.to] {
			_, b := blockOf(ref)
			base, item := int(b-s.first)*64, int(ref&(1<<refItemBits-1))
			in := true
			for _, p := range r.pos[item*r.k : (item+1)*r.k] {
				x := base + int(p>>3)
				if x >= len(data) || data[x]&(0x80>>(p&7)) == 0 {
					in = false
					break
				}
			}
			out[item] = in
		}
	}
}
