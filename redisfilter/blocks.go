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
// round trip per node. A scalable filter's chain reads the same way, an
// item's block in each sub-filter, all sub-filters in one pipeline
// (scalable_exists.go).

// mergeGap is the most bytes between two blocks that one GETRANGE reads
// over rather than split in two: a command costs Redis about as much as
// copying a few hundred bytes more.
const mergeGap = 192

// A ref is one item's block in one key, packed for sorting: the block's
// place in the high bits (key << 23 | block index in the key: a key of at
// most 512 MiB has 2²³ blocks, and there are at most 2¹⁶ shards or
// bloom.MaxSubFilters sub-filters) and the item's index in the chunk in
// the low refItemBits.
const (
	refItemBits  = 16
	refShardBits = 23 // a key's block index
)

// A chunk's item index must fit refItemBits: MaxBatch items of a Filter,
// chainBlocks / sub-filters of a Scalable.
var (
	_ [1<<refItemBits - MaxBatch]struct{}
	_ [1<<refItemBits - chainBlocks]struct{}
)

func blockOf(ref uint64) (key int, block uint64) {
	b := ref >> refItemBits
	return int(b >> refShardBits), b & (1<<refShardBits - 1)
}

// blockRange is one GETRANGE: blocks first … last of a key, holding the
// items refs[from:to] of the sorted batch.
type blockRange struct {
	key         int
	first, last uint64 // block indices in the key
	from, to    int
	cmd         *redis.StringCmd
}

// A readLayer is a set of keys every item is looked up in once: a
// Filter's shards (one of them per item) or one sub-filter of a chain.
// Item i's in-block bit offsets are pos[base+i*k : base+(i+1)*k].
type readLayer struct{ k, base int }

// blockReader answers one chunk of a batch of reads: an item is found if
// it has all its bits in some layer.
type blockReader struct {
	keys   []string    // the keys a ref names
	layers []readLayer // one for all keys (a Filter's shards), or one per key (a chain)
	refs   []uint64    // sorted
	pos    []uint16    // in-block bit offsets (SETBIT numbering)
	spans  []blockRange
	args   []any   // the GETRANGEs' arguments, 4 per range
	ends   []int64 // their start and end bytes, pointed to by args (no boxing)

	// A watched write's SETRANGEs (scalable_watch.go).
	writes []blockWrite
	wbuf   []byte   // the ranges changed
	wargs  []any    // 4 per range
	wnums  []int64  // their offsets
	wdata  []string // their bytes
}

// readers keeps blockReaders' buffers between calls.
var readers = sync.Pool{New: func() any { return new(blockReader) }}

func getReader() *blockReader { return readers.Get().(*blockReader) }

// putReader drops r's replies and keys and returns it to the pool.
func putReader(r *blockReader) {
	clear(r.spans[:cap(r.spans)])
	clear(r.wdata[:cap(r.wdata)])
	r.keys = nil
	readers.Put(r)
}

// existsBlocked answers ExistsMany for a blocked filter.
func (f *Filter) existsBlocked(ctx context.Context, m *Meta, items [][]byte) ([]bool, error) {
	out := make([]bool, len(items))
	r := getReader()
	defer putReader(r)
	for lo := 0; lo < len(items); lo += MaxBatch {
		hi := min(lo+MaxBatch, len(items))
		r.locateShards(m, items[lo:hi], f.hash)
		if err := r.read(ctx, f.client); err != nil {
			return nil, fmt.Errorf("redisfilter: test %q: %w", f.name, err)
		}
		r.answer(out[lo:hi])
	}
	return out, nil
}

// start begins a chunk over keys.
func (r *blockReader) start(keys []string) {
	r.keys, r.layers, r.refs, r.pos = keys, r.layers[:0], r.refs[:0], r.pos[:0]
}

// layer begins the next layer, of k bits per item.
func (r *blockReader) layer(k, items int) {
	r.layers = append(r.layers, readLayer{k: k, base: len(r.pos)})
	r.refs = slices.Grow(r.refs, items)
	r.pos = slices.Grow(r.pos, items*k)
}

// put adds item's read of the current layer: bit offsets offs, the first
// of which is local bit first of key.
func (r *blockReader) put(key int, first uint64, item int, offs []uint64) {
	r.refs = append(r.refs, (uint64(key)<<refShardBits|first/bloom.BlockBits)<<refItemBits|uint64(item))
	for _, o := range offs {
		r.pos = append(r.pos, uint16(o%bloom.BlockBits))
	}
}

// layerOf is the layer of key's reads.
func (r *blockReader) layerOf(key int) readLayer {
	if len(r.layers) == 1 {
		return r.layers[0]
	}
	return r.layers[key]
}

// locateShards fills r for items of a sharded filter, sorted by block.
func (r *blockReader) locateShards(m *Meta, items [][]byte, hash func([]byte) bloom.Hash) {
	k := int(m.Sizing.K)
	r.start(m.Shards)
	r.layer(k, len(items))
	offs := make([]uint64, 0, k)
	for i, it := range items {
		offs = m.Sizing.Offsets(hash(it), offs[:0])
		shard, local := m.locate(offs[0])
		r.put(shard, local, i, offs)
	}
	slices.Sort(r.refs)
}

// read sends one GETRANGE per run of nearby blocks, in one pipeline.
func (r *blockReader) read(ctx context.Context, client redis.UniversalClient) error {
	_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		r.queue(ctx, p)
		return nil
	})
	return err
}

// queue adds to p one GETRANGE per run of nearby blocks.
func (r *blockReader) queue(ctx context.Context, p redis.Pipeliner) {
	r.spans = r.spans[:0]
	const gapBlocks = mergeGap / 64
	for j, ref := range r.refs {
		key, b := blockOf(ref)
		if n := len(r.spans); n > 0 && r.spans[n-1].key == key && b <= r.spans[n-1].last+1+gapBlocks {
			r.spans[n-1].last, r.spans[n-1].to = b, j+1
			continue
		}
		r.spans = append(r.spans, blockRange{key: key, first: b, last: b, from: j, to: j + 1})
	}
	r.args = slices.Grow(r.args[:0], 4*len(r.spans))[:4*len(r.spans)]
	r.ends = slices.Grow(r.ends[:0], 2*len(r.spans))[:2*len(r.spans)]
	for i := range r.spans {
		s := &r.spans[i]
		r.ends[2*i], r.ends[2*i+1] = int64(s.first*64), int64(s.last*64+63)
		a := r.args[4*i : 4*i+4 : 4*i+4]
		a[0], a[1], a[2], a[3] = "GETRANGE", &r.keys[s.key], &r.ends[2*i], &r.ends[2*i+1]
		s.cmd = redis.NewStringCmd(ctx, a...)
		_ = p.Process(ctx, s.cmd)
	}
}

// answer sets out[i] for each item i found with all its bits in a block
// read (it never clears one). Bytes past the end of a reply were never
// written (a missing key reads as ""): zeros.
func (r *blockReader) answer(out []bool) { r.answerBelow(out, len(r.keys)) }

// answerBelow is answer from the reads of keys below key only.
func (r *blockReader) answerBelow(out []bool, key int) {
	for _, s := range r.spans {
		if s.key >= key {
			continue
		}
		data := s.cmd.Val()
		for _, ref := range r.refs[s.from:s.to] {
			_, b := blockOf(ref)
			item := int(ref & (1<<refItemBits - 1))
			out[item] = out[item] || hasAll(data, int(b-s.first)*64, r.bitsOf(s.key, item))
		}
	}
}

// bitsOf is item's in-block bit offsets in key.
func (r *blockReader) bitsOf(key, item int) []uint16 {
	l := r.layerOf(key)
	return r.pos[l.base+item*l.k : l.base+(item+1)*l.k]
}

// hasAll reports whether data holds every bit pos of the block at byte
// base (SETBIT numbering); bytes past its end are zeros.
func hasAll[T string | []byte](data T, base int, pos []uint16) bool {
	for _, p := range pos {
		x := base + int(p>>3)
		if x >= len(data) || data[x]&(0x80>>(p&7)) == 0 {
			return false
		}
	}
	return true
}
