package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// Watched writes: the cheapest way to add a batch to a blocked scalable
// filter that no other client is writing at the same moment.
//
// A gated write (scalable_fast.go) sets each bit with a BITFIELD
// operation of four arguments, which Redis parses at about 0.35 µs a bit
// (2.4 µs an item at k = 7). But all k bits of an item lie in one 64-byte
// block: read the blocks and write them back whole, and an item costs
// one GETRANGE and one SETRANGE of four arguments each (docs/BENCHMARKS.md,
// issue 15). Writing back a whole block is only right if nobody changed
// it in between, so the write is an optimistic transaction:
//
//  1. WATCH the last sub-filter and read the blocks the batch touches in
//     every sub-filter (GETRANGE; BITFIELD_RO for a classic older one), in
//     one pipeline: the WATCH is the pipeline's first command, so it is in
//     force before the first read, and the batch costs two round trips,
//     not three (go-redis's Watch sends its WATCH alone and waits: 9% of
//     BF.ADD's rate and 17% of BF.MADD's in the stateless server at
//     -P 16, docs/BENCHMARKS.md). On a cluster (or a ring) the WATCH goes
//     alone, as go-redis's Watch sends it: that client finds the key's
//     node and follows its redirections from the WATCH;
//  2. in the client, in batch order: an item found in an older
//     sub-filter is not new; otherwise it is new if one of its bits is 0
//     in the last one's block (as the batch's earlier items left it), and
//     its bits are set there;
//  3. MULTI, the gate (with the exact number of new items: nothing to
//     reserve or release), one SETRANGE per range of blocks changed, the
//     ungate, EXEC.
//
// If any client wrote the last sub-filter after the WATCH, EXEC runs
// nothing; AddMany then sends the batch as a gated write, and for a
// while (watchPause) sends gated writes only, so that clients writing one
// filter at once do not keep aborting each other. A refusing gate stops
// the SETRANGEs as it stops BITFIELDs (WRONGTYPE). Since the counts are
// exact at EXEC, watched writes need no reservation.

// watchPause is how long AddMany sends gated writes only after a
// watched write was aborted.
const watchPause = time.Second

// codeConflict: a watched write was aborted (another client wrote the
// last sub-filter meanwhile); nothing was written.
const codeConflict = -1

// watchable reports whether a batch on m may go as a watched write.
func (s *Scalable) watchable(m *scalableMeta) bool {
	return m.subs[len(m.subs)-1].Layout == bloom.Blocked && time.Now().UnixNano() >= s.watchOff.Load()
}

// addWatched adds hashes to m's filter with one watched write, answering
// in out (len(hashes)) whether each was new. It returns codeDone, the
// gate's refusal (as addGated) or codeConflict.
func (s *Scalable) addWatched(ctx context.Context, m *scalableMeta, hashes []bloom.Hash, out []bool) (int64, error) {
	clear(out)
	last := len(m.subs) - 1
	lastKey := m.subKey(last)
	code := int64(codeDone)
	single, inPipe := s.client.(*redis.Client) // one node: the WATCH goes in the reads' pipeline
	write := func(tx *redis.Tx) (err error) {
		r := getReader()
		defer putReader(r)
		r.locateChain(m, len(m.subs), hashes)
		older := &bitProbes{m: m, subs: last, hashes: hashes} // classic older sub-filters
		var watch *redis.Cmd
		// A WATCH sent in the pipeline is out of go-redis's sight: until
		// EXEC is known to have run, every way out releases it, so the
		// connection goes back to the pool unwatched (go-redis's Watch
		// releases its own). The release's own failure is not the
		// batch's: on a broken connection go-redis drops the connection.
		// go-redis retries a pipeline on its first command's error, the
		// WATCH's here: a Redis still loading its data (LOADING) fails
		// the batch at once rather than after MaxRetries backoffs.
		armed := inPipe
		defer func() {
			if armed {
				_ = tx.Unwatch(ctx).Err()
			}
		}()
		if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			if inPipe {
				watch = p.Do(ctx, "watch", lastKey)
			}
			r.queue(ctx, p)
			older.queue(ctx, p)
			return nil
		}); err != nil {
			return err
		}
		if watch != nil && watch.Err() != nil {
			return watch.Err()
		}
		if err := older.answer(out); err != nil { // out: found in an older sub-filter, for now
			return err
		}
		r.answerBelow(out, last)
		fresh := r.setLast(last, out)
		if fresh == 0 {
			return nil
		}
		var gate *redis.Cmd
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			gate = p.Eval(ctx, gateLua, []string{s.name, lastKey, m.holdKey(), m.pendingKey()},
				m.id, strconv.Itoa(len(m.subs)), "items."+strconv.Itoa(last), fresh, m.subs[last].N, "", 0, "", writeToken())
			r.queueWrites(ctx, p)
			p.Eval(ctx, ungateLua, []string{lastKey, m.holdKey()})
			return nil
		})
		// EXEC ran (and ended the WATCH) when it committed, was aborted
		// by the WATCH, or discarded the queue (EXECABORT); any other
		// error may come before it (a hook, a limiter, MULTI refused), so
		// the deferred UNWATCH stays armed, as go-redis does for its own.
		armed = inPipe && err != nil && !errors.Is(err, redis.TxFailedErr) && !redis.IsExecAbortError(err)
		if errors.Is(err, redis.TxFailedErr) {
			code = codeConflict
			return nil
		}
		g, gerr := gate.Int64Slice()
		switch {
		case gerr != nil && err != nil && gate.Err() == nil: // the transaction failed before the gate's reply
			return err
		case gerr != nil:
			return s.scriptErr(gerr)
		case len(g) != 2 || g[1] < 0:
			return fmt.Errorf("gate reply %v", g)
		}
		m.lastFill.Store(uint64(g[1]))
		if code = g[0]; code == codeDone {
			return err // a SETRANGE's
		}
		return nil
	}
	var err error
	if inPipe {
		err = single.Watch(ctx, write)
	} else {
		err = s.client.Watch(ctx, write, lastKey)
	}
	if err != nil || code != codeDone {
		clear(out)
	}
	if code == codeConflict {
		s.watchOff.Store(time.Now().Add(watchPause).UnixNano())
	}
	return code, err
}

// setLast takes the reads of sub-filter last (a blocked one) and, in
// batch order, each item not already marked in found (found in an older
// sub-filter): if one of its bits is 0 it is new, marked in found, and
// its bits are set in a copy of the range read (r.writes, for
// queueWrites). It returns the number of new items; found then says
// which items are new. Items in one block are in batch order among the
// refs, and blocks are independent, so this order is the batch's.
func (r *blockReader) setLast(last int, found []bool) int {
	inOlder := slices.Clone(found)
	clear(found)
	r.writes, r.wbuf = r.writes[:0], r.wbuf[:0]
	fresh := 0
	for i, s := range r.spans {
		if s.key != last {
			continue
		}
		data, start := s.cmd.Val(), -1 // start: the range's copy in wbuf, once changed
		for _, ref := range r.refs[s.from:s.to] {
			_, b := blockOf(ref)
			item := int(ref & (1<<refItemBits - 1))
			if inOlder[item] {
				continue
			}
			base, pos := int(b-s.first)*64, r.bitsOf(last, item)
			if start < 0 {
				if hasAll(data, base, pos) {
					continue
				}
				start = len(r.wbuf) // the range, padded with the zeros Redis did not store
				r.wbuf = slices.Grow(r.wbuf, int(s.last-s.first+1)*64)[:start+int(s.last-s.first+1)*64]
				clear(r.wbuf[start+copy(r.wbuf[start:], data):])
			} else if hasAll(r.wbuf[start:], base, pos) {
				continue
			}
			for _, p := range pos {
				r.wbuf[start+base+int(p>>3)] |= 0x80 >> (p & 7)
			}
			found[item] = true
			fresh++
		}
		if start >= 0 {
			r.writes = append(r.writes, blockWrite{span: i, start: start})
		}
	}
	return fresh
}

// blockWrite is one SETRANGE of a watched write: span's range, changed,
// at wbuf[start:].
type blockWrite struct{ span, start int }

// queueWrites adds to p the SETRANGEs of setLast, their arguments
// pointing into r (no boxing per range).
func (r *blockReader) queueWrites(ctx context.Context, p redis.Pipeliner) {
	n := len(r.writes)
	r.wargs = slices.Grow(r.wargs[:0], 4*n)[:4*n]
	r.wnums = slices.Grow(r.wnums[:0], n)[:n]
	r.wdata = slices.Grow(r.wdata[:0], n)[:n]
	for i, w := range r.writes {
		s := r.spans[w.span]
		size := int(s.last-s.first+1) * 64
		// wbuf is not written again until the pipeline has run: the
		// strings may share its bytes.
		r.wnums[i], r.wdata[i] = int64(s.first*64), unsafe.String(&r.wbuf[w.start], size)
		a := r.wargs[4*i : 4*i+4 : 4*i+4]
		a[0], a[1], a[2], a[3] = "SETRANGE", &r.keys[s.key], &r.wnums[i], &r.wdata[i]
		_ = p.Process(ctx, redis.NewIntCmd(ctx, a...))
	}
}
