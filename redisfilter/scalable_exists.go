package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// Exists reports whether item may be in the filter (one pipelined round
// trip, no script).
func (s *Scalable) Exists(ctx context.Context, item []byte) (bool, error) {
	r, err := s.ExistsMany(ctx, [][]byte{item})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// pipelineOps bounds the bit reads in one pipeline of ExistsMany over
// classic sub-filters, so that a pipeline is a few MB and its write never
// meets the client's timeout while Redis works through it.
const pipelineOps = 1 << 18

// chainBlocks bounds the blocks read in one pipeline of ExistsMany over
// blocked sub-filters: one per item and sub-filter, at most 4 MiB of
// replies.
const chainBlocks = 1 << 16

// ExistsMany reports for each item whether it may be in the filter: in
// some sub-filter. It reads every sub-filter, together with the number of
// sub-filters, in one pipeline (all keys are on one node: one round trip)
// per chunk of the batch, and reads again if the sub-filters have
// changed. Blocked sub-filters are read with one GETRANGE per run of
// nearby blocks (blocks.go), chainBlocks blocks per chunk; classic ones
// with BITFIELD_RO commands of at most MaxOpsPerCommand bits,
// pipelineOps bits per chunk. A missing filter is ErrNotFound.
func (s *Scalable) ExistsMany(ctx context.Context, items [][]byte) ([]bool, error) {
	out := make([]bool, len(items))
	hashes := s.hashes(items)
	m := s.view()
	r := getReader() // used for the blocked sub-filters, if any
	defer putReader(r)
	for from, stale := 0, 0; from < len(hashes); {
		n := min(len(hashes)-from, chunkItems(m))
		current, err := s.probeAll(ctx, m, len(m.subs), r, hashes[from:from+n], out[from:from+n])
		if err != nil {
			return nil, err
		}
		if current {
			from += n
			continue
		}
		if stale++; stale > maxStale {
			return nil, fmt.Errorf("redisfilter: test %q: the metadata changed %d times", s.name, maxStale)
		}
		clear(out[from : from+n])
		if m, err = s.refresh(ctx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// chunkItems is the most items ExistsMany reads from m in one pipeline:
// within chainBlocks blocks of its blocked sub-filters and pipelineOps
// bits of its classic ones (a blocked chain's small sub-filters are
// classic, docs/DESIGN.md §5).
func chunkItems(m *scalableMeta) int {
	blocked, bits := 0, 0
	for _, sz := range m.subs {
		if sz.Layout == bloom.Blocked {
			blocked++
		} else {
			bits += int(sz.K)
		}
	}
	n := len(m.subs) * chainBlocks // no bound yet
	if blocked > 0 {
		n = chainBlocks / blocked
	}
	if bits > 0 {
		n = min(n, pipelineOps/bits)
	}
	return max(1, n)
}

// A chainRead is the reads of a chunk of items from every sub-filter.
type chainRead interface {
	queue(ctx context.Context, p redis.Pipeliner)
	// answer sets out[i] for the items found, once the pipeline has run.
	answer(out []bool) error
}

// probeAll tests hashes against m's first subs sub-filters, setting
// out[i] for the items found, and reports whether m was current. r reads
// the blocked sub-filters, bitProbes the classic ones, in the same
// pipeline.
func (s *Scalable) probeAll(ctx context.Context, m *scalableMeta, subs int, r *blockReader, hashes []bloom.Hash, out []bool) (bool, error) {
	r.locateChain(m, subs, hashes)
	reads := []chainRead{blockAnswers{r}, &bitProbes{m: m, subs: subs, hashes: hashes}}
	var st *redis.SliceCmd
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		st = p.HMGet(ctx, s.name, "id", "filters")
		for _, rd := range reads {
			rd.queue(ctx, p)
		}
		return nil
	})
	if err := st.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("redisfilter: test %q: %w", s.name, s.scriptErr(err))
	}
	if err != nil {
		return false, fmt.Errorf("redisfilter: test %q: %w", s.name, err)
	}
	vals := st.Val()
	if vals[0] == nil {
		return false, fmt.Errorf("redisfilter: test %q: %w", s.name, ErrNotFound)
	}
	if vals[0] != m.id || vals[1] != strconv.Itoa(len(m.subs)) {
		return false, nil
	}
	for _, rd := range reads {
		if err := rd.answer(out); err != nil {
			return false, fmt.Errorf("redisfilter: test %q: %w", s.name, err)
		}
	}
	return true, nil
}

// locateChain fills r for hashes in each blocked one of m's first subs
// sub-filters (each one key), sorted by sub-filter and block. A classic
// sub-filter gets an empty layer, so that layers stay indexed by key.
func (r *blockReader) locateChain(m *scalableMeta, subs int, hashes []bloom.Hash) {
	r.start(m.subKeys()[:subs])
	offs := make([]uint64, 0, bloom.MaxK)
	for i, sz := range m.subs[:subs] {
		if sz.Layout != bloom.Blocked {
			r.layer(int(sz.K), 0)
			continue
		}
		r.layer(int(sz.K), len(hashes))
		for j, h := range hashes {
			offs = sz.Offsets(h, offs[:0])
			r.put(i, offs[0], j, offs)
		}
	}
	slices.Sort(r.refs)
}

// blockAnswers is a blockReader as a chainRead.
type blockAnswers struct{ *blockReader }

func (b blockAnswers) answer(out []bool) error {
	b.blockReader.answer(out)
	return nil
}

// bitProbes reads the classic ones of a chain's first subs sub-filters:
// BITFIELD_RO commands, each of some items against one sub-filter.
type bitProbes struct {
	m      *scalableMeta
	subs   int
	hashes []bloom.Hash
	probes []probe // queued
}

// probe is one BITFIELD_RO command of bitProbes: items from … from+n-1
// against one sub-filter.
type probe struct {
	k, from, n int
	cmd        *redis.IntSliceCmd
}

func (b *bitProbes) queue(ctx context.Context, p redis.Pipeliner) {
	offs := make([]uint64, 0, bloom.MaxK)
	for i, sz := range b.m.subs[:b.subs] {
		if sz.Layout == bloom.Blocked {
			continue // blockReader's
		}
		k := int(sz.K)
		per := max(1, MaxOpsPerCommand/k)
		for from := 0; from < len(b.hashes); from += per {
			n := min(per, len(b.hashes)-from)
			args := make([]any, 0, 2+3*k*n)
			args = append(args, "BITFIELD_RO", b.m.subKey(i))
			for _, h := range b.hashes[from : from+n] {
				for _, o := range sz.Offsets(h, offs[:0]) {
					args = append(args, "GET", "u1", o)
				}
			}
			cmd := redis.NewIntSliceCmd(ctx, args...) // replies without boxing each bit
			p.Process(ctx, cmd)
			b.probes = append(b.probes, probe{k: k, from: from, n: n, cmd: cmd})
		}
	}
}

func (b *bitProbes) answer(out []bool) error {
	for _, pr := range b.probes {
		bits, err := pr.cmd.Result()
		if err != nil || len(bits) != pr.n*pr.k {
			return fmt.Errorf("reply of %d bits for %d items: %v", len(bits), pr.n, err)
		}
		for j := range pr.n {
			out[pr.from+j] = out[pr.from+j] || !anyZero(bits[j*pr.k:(j+1)*pr.k])
		}
	}
	return nil
}
