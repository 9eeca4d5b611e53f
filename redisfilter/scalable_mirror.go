package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

// Mirrored writes: a Scalable's copy of its filter's bits, so that a
// batch of adds needs no reads.
//
// A watched write (scalable_watch.go) reads the blocks it merges after
// its WATCH: per batch two round trips, and per item a GETRANGE and a
// SETRANGE. A WATCH cannot carry a copy of the bits from one transaction
// to the next (EXEC ends it, and one sent after EXEC comes too late:
// docs/DESIGN.md §6). The filter's "writes" token can (scalable_meta.go):
// every write of bits replaces it, in the same atomic step, with a token
// no other write makes. So a client whose copy is as of token T merges
// the batch into its copy and sends one transaction: MULTI, the gate
// given T (it refuses with codeWritten if the token is not T, and
// replaces it when it lets the batch through), one SETRANGE per range of
// changed bytes, the ungate, EXEC. That is one round trip a batch and one
// SETRANGE an item. A refused write wrote nothing; a write let through
// merged the bits as they were, and the copy is then as of the new token.
// Tokens are unique, so a Redis that lost writes (a failover) cannot show
// a token the copy is as of unless it holds the same bits.
//
// The copy holds all the sub-filters (the older ones answer whether an
// item is new too). It is loaded on the first batch of at least
// gatedMinItems items (a filter written one item at a time stays
// unmirrored), in reads of at most mirrorChunk bytes between two reads of
// the token: equal tokens mean no write came between them. It is dropped
// when the filter grows (the add script opens the next sub-filter), is
// deleted or made again, when another client writes it, and when its
// stream breaks (txstream.go); AddMany then goes back to watched writes,
// and after another client's write or a broken stream loads no copy for
// a pause that doubles each time (mirrorPause … mirrorPauseMax), so
// clients that write one filter together do not keep reloading it. A
// write that never reached Redis goes again as a watched write; one whose
// reply was lost returns its error, as AddMany does after any network
// error (it may or may not have run). A batch whose items are all in the
// copy already answers after one read of the token.
//
// Memory: the copies come out of a Mirrors budget, shared by the
// Scalables given it (WithMirrors); a filter larger than what is left
// gets no copy. A Scalable holds one copy at most: DropMirror gives its
// bytes back, and so does the collector once the Scalable is gone.
//
// Concurrency: a Scalable's mirrored writes merge in turn (under mirMu)
// and go to Redis one after another, each sent once the one before it is
// through, so one may be merged while another is in flight (addMirrored);
// its other operations do not wait for them.

// mirrorItems bounds the items of one mirrored write: a transaction of
// that many SETRANGEs keeps Redis busy for a few milliseconds. A larger
// batch (a BF.MADD of more items) goes in several, and is atomic only
// per mirrorItems, as it is per chunk on the other ways.
const mirrorItems = 16384

// mirrorChunk bounds one read of a copy's load: the reply Redis builds.
const mirrorChunk = 8 << 20

// mirrorPause is the first pause of the copies after another client's
// write, doubled at each such write up to mirrorPauseMax, and reset by a
// mirrored write that went through.
const (
	mirrorPause    = time.Second
	mirrorPauseMax = 64 * time.Second
)

// Mirrors is a budget of memory for the copies of Scalables' bits
// (WithMirrors): the copies of all Scalables given the same Mirrors hold
// at most its limit of bytes together. Safe for concurrent use.
type Mirrors struct {
	limit     int64
	used      atomic.Int64
	loads     atomic.Int64
	conflicts atomic.Int64
	chained   atomic.Int64

	streamMu sync.Mutex
	streams  map[redis.UniversalClient]*txStream // nil value: the client cannot have one
}

// streamFor returns the budget's stream of mirrored writes to client's
// Redis (txstream.go), made at the first call, or nil when the client
// cannot have one.
func (b *Mirrors) streamFor(client redis.UniversalClient) *txStream {
	b.streamMu.Lock()
	defer b.streamMu.Unlock()
	st, ok := b.streams[client]
	if !ok {
		if b.streams == nil {
			b.streams = map[redis.UniversalClient]*txStream{}
		}
		st = streamFor(client)
		b.streams[client] = st
	}
	return st
}

// Close closes the connections of the budget's streams for good: the
// mirrored writes after it go through go-redis.
func (b *Mirrors) Close() {
	b.streamMu.Lock()
	defer b.streamMu.Unlock()
	for _, st := range b.streams {
		if st != nil {
			st.close()
		}
	}
}

// NewMirrors returns a budget of limit bytes.
func NewMirrors(limit int64) *Mirrors { return &Mirrors{limit: limit} }

// MirrorStats are a budget's figures.
type MirrorStats struct {
	Bytes     int64 // held by copies now
	Loads     int64 // copies loaded
	Conflicts int64 // copies dropped because another client wrote the filter
	Chained   int64 // writes merged while the one before was in flight
}

// Stats returns the budget's figures.
func (b *Mirrors) Stats() MirrorStats {
	return MirrorStats{Bytes: b.used.Load(), Loads: b.loads.Load(), Conflicts: b.conflicts.Load(), Chained: b.chained.Load()}
}

// take reserves n bytes, if they are left.
func (b *Mirrors) take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *Mirrors) give(n int64) { b.used.Add(-n) }

// WithMirrors lets a Scalable keep a copy of its filter's bits within
// budget b, for adds that need no reads (scalable_mirror.go). OpenScalable
// and CreateScalable take it; other constructors ignore it.
func WithMirrors(b *Mirrors) Option { return func(o *options) { o.mirrors = b } }

// mirror is a copy of a filter's bits as of a writes token.
type mirror struct {
	id      string
	filters int
	token   string   // the token the bits are as of once the writes in flight have gone through
	subs    [][]byte // sub-filter i's bytes, padded with zeros to its size
	size    int64
	done    runtime.Cleanup // gives the bytes back if the copy is collected undropped
	tail    *inFlight       // the last write merged and not yet through, or nil
	later   []string        // the tokens of the last writes merged, oldest first (mirrorLater of them)
}

// mirrorLater bounds mirror.later: far more writes than are ever in
// flight at once.
const mirrorLater = 64

// after reports whether token is expect or the token of a write merged
// after the one that set expect: the filter then holds every bit the
// copy held as of expect (each of those writes was let through only on
// the token before it). mirMu held.
func (c *mirror) after(expect, token string) bool {
	if token == expect {
		return true
	}
	i := slices.Index(c.later, expect)
	return slices.Contains(c.later[i+1:], token) // i = -1: expect is older than later, all are after it
}

// inFlight is a mirrored write merged into the copy and sent (or about
// to be): the next one waits for it (done closed, ok set) before it
// sends its own, whose gate expects its token.
type inFlight struct {
	done  chan struct{}
	ok    bool
	reply *txReply // its transaction on a stream, answered in order: nil through go-redis
}

// through reports whether the write before, prev, went through: from
// its reply on the stream when it has one (answered before the next
// write's, without waiting for prev's caller to be scheduled), else once
// its caller is done.
func (prev *inFlight) through(ctx context.Context) (bool, error) {
	if r := prev.reply; r != nil {
		select {
		case <-r.done:
			return r.err == nil && r.gateEr == nil && len(r.gate) == 2 && r.gate[0] == codeDone && r.setErr == nil, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if err := waitFor(ctx, prev); err != nil {
		return false, err
	}
	return prev.ok, nil
}

// of reports whether the copy is of m's view: the same filter, with as
// many sub-filters.
func (c *mirror) of(m *scalableMeta) bool { return c.id == m.id && c.filters == len(m.subs) }

// mirrorView reports whether s holds a copy for m's view: a hint, read
// without waiting for a mirrored write in flight.
func (s *Scalable) mirrorView(m *scalableMeta) bool {
	c := s.mirLive.Load()
	return c != nil && c.of(m)
}

// Mirrored reports whether the Scalable holds a copy of its filter's
// bits for its current view: its batches of adds may then be in flight
// two at a time, each merged while the one before is on its way.
func (s *Scalable) Mirrored() bool { return s.mirrors != nil && s.mirrorView(s.view()) }

// DropMirror drops the Scalable's copy of its filter, if it holds one,
// giving its bytes back to the budget. The Scalable may load another.
func (s *Scalable) DropMirror() {
	s.mirMu.Lock()
	defer s.mirMu.Unlock()
	s.dropMirror()
}

// dropMirror drops the copy (mirMu held).
func (s *Scalable) dropMirror() {
	c := s.mir
	if c == nil {
		return
	}
	s.mir = nil
	s.mirLive.Store(nil)
	c.done.Stop()
	s.mirrors.give(c.size)
}

// conflict drops the copy after another client's write, and pauses the
// copies (mirMu held).
func (s *Scalable) conflict() {
	s.mirrors.conflicts.Add(1)
	s.pauseMirror()
}

// pauseMirror drops the copy and loads none for a pause that doubles
// each time, up to mirrorPauseMax, until a mirrored write goes through
// (mirMu held): after another client's write, or a stream that broke,
// so that the next batches do not each load the whole filter again.
func (s *Scalable) pauseMirror() {
	s.dropMirror()
	s.mirPause = min(max(2*s.mirPause, mirrorPause), mirrorPauseMax)
	s.mirOff = time.Now().Add(s.mirPause)
}

// waitFor waits until the write before is through, or ctx is done.
func waitFor(ctx context.Context, prev *inFlight) error {
	select {
	case <-prev.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mirrorFor returns the copy for m's view, loading one if the batch of n
// items may (mirMu held); nil when there is none.
func (s *Scalable) mirrorFor(ctx context.Context, m *scalableMeta, n int) (*mirror, error) {
	if c := s.mir; c != nil {
		if c.of(m) {
			return c, nil
		}
		s.dropMirror()
	}
	if n < gatedMinItems || time.Now().Before(s.mirOff) {
		return nil, nil
	}
	size := int64(m.bytes())
	if !s.mirrors.take(size) {
		return nil, nil
	}
	c, err := s.loadMirror(ctx, m)
	if c == nil {
		s.mirrors.give(size)
		return nil, err
	}
	c.size = size
	c.done = runtime.AddCleanup(c, s.mirrors.give, size)
	s.mirrors.loads.Add(1)
	s.mir = c
	s.mirLive.Store(c)
	return c, nil
}

// mirrorState reads the filter's id, sub-filter count and token.
func (s *Scalable) mirrorState(ctx context.Context, p redis.Cmdable) *redis.SliceCmd {
	return p.HMGet(ctx, s.name, "id", "filters", "writes")
}

// sameState reports whether a state read is m's view, and its token.
func sameState(cmd *redis.SliceCmd, m *scalableMeta) (string, bool) {
	v, err := cmd.Result()
	if err != nil || len(v) != 3 {
		return "", false
	}
	id, _ := v[0].(string)
	filters, _ := v[1].(string)
	token, ok := v[2].(string)
	return token, ok && id == m.id && filters == strconv.Itoa(len(m.subs))
}

// loadMirror reads all of m's sub-filters between two reads of the
// token, in round trips of at most mirrorChunk bytes. It returns nil
// (and no error) if the filter is not m's view or was written meanwhile.
func (s *Scalable) loadMirror(ctx context.Context, m *scalableMeta) (*mirror, error) {
	first := s.mirrorState(ctx, s.client)
	token, ok := sameState(first, m)
	if !ok {
		return nil, first.Err()
	}
	c := &mirror{id: m.id, filters: len(m.subs), token: token, subs: make([][]byte, len(m.subs))}
	for i, sz := range m.subs {
		c.subs[i] = make([]byte, sz.Bytes())
	}
	type piece struct {
		sub, at int
		cmd     *redis.StringCmd
	}
	var pieces []piece
	flush := func() error {
		if len(pieces) == 0 {
			return nil
		}
		_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j := range pieces {
				pc := &pieces[j]
				end := min(pc.at+mirrorChunk, len(c.subs[pc.sub])) - 1
				pc.cmd = p.GetRange(ctx, m.subKey(pc.sub), int64(pc.at), int64(end))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, pc := range pieces {
			copy(c.subs[pc.sub][pc.at:], pc.cmd.Val())
		}
		pieces = pieces[:0]
		return nil
	}
	for i, b := range c.subs {
		for at := 0; at < len(b); at += mirrorChunk {
			if pieces = append(pieces, piece{sub: i, at: at}); len(pieces) == 4 { // 4 pieces a round trip
				if err := flush(); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	last := s.mirrorState(ctx, s.client)
	if again, ok := sameState(last, m); !ok || again != token {
		return nil, last.Err()
	}
	return c, nil
}

// mirrorWrite is the state of one mirrored write: the bytes changed, a
// copy of them (the copy itself may change under the next write while
// this one is sent), and the SETRANGEs' arguments, pointing into it.
type mirrorWrite struct {
	changed []int    // the bytes changed (a classic sub-filter's)
	spans   []span   // the bytes changed per new item (a blocked one's: within its block)
	offs    []uint64 // bit offsets, k per item of the batch (SETBIT numbering)
	buf     []byte   // the spans' bytes, one after another
	touch   byte     // merge's first loads, kept (not optimized away)
	args    []any
	nums    []int64
	data    []string
}

var mirrorWrites = sync.Pool{New: func() any { return new(mirrorWrite) }}

// span is bytes from … to of a sub-filter.
type span struct{ from, to int }

// addMirrored adds hashes to m's filter with one mirrored write, if s
// holds (or may load) a copy for m's view, answering in out (len(hashes))
// whether each was new. It returns codeDone; codeConflict when there is
// no copy, the filter was written by another client, or the write before
// it failed (the batch then goes as a watched write); or the gate's
// refusal (codeStale, codeNeedsSub, codeNotFound) as addWatched does.
//
// Writes in flight: a call merges its batch into the copy, over the
// bits of the writes before it that are still in flight, and sends its
// transaction as soon as the one before it has gone through, expecting
// the token that one set. So while one batch is on its way to Redis and
// back, the next is merged: with two callers (the server's lanes give a
// filter with a copy two batches at once) the round trip and the merge
// overlap. A write that fails drops the copy; the writes merged after it
// then send nothing and return codeConflict.
func (s *Scalable) addMirrored(ctx context.Context, m *scalableMeta, hashes []bloom.Hash, out []bool) (int64, error) {
	clear(out)
	s.mirMu.Lock()
	c, err := s.mirrorFor(ctx, m, len(hashes))
	if c == nil {
		s.mirMu.Unlock()
		return codeConflict, err
	}
	w := mirrorWrites.Get().(*mirrorWrite)
	defer mirrorWrites.Put(w)
	last := len(m.subs) - 1
	fresh := w.merge(c, m, hashes, out)
	expect, prev := c.token, c.tail
	me := &inFlight{done: make(chan struct{})}
	tok := writeToken()
	lastKey := m.subKey(last)
	gateKeys := []string{s.name, lastKey, m.holdKey(), m.pendingKey()}
	gateArgs := []string{m.id, strconv.Itoa(len(m.subs)), "items." + strconv.Itoa(last), strconv.Itoa(fresh),
		strconv.FormatUint(m.subs[last].N, 10), "", "0", expect, tok}
	st := s.mirrors.streamFor(s.client)
	var sent *txReply
	var sendErr error
	if st != nil && fresh > 0 {
		// Written in the order merged (mirMu held): the stream keeps it.
		sent, sendErr = w.sendStream(ctx, st, lastKey, gateKeys, gateArgs, m.holdKey())
	}
	me.reply = sent
	if fresh > 0 {
		c.token, c.tail = tok, me
		if len(c.later) == mirrorLater {
			c.later = append(c.later[:0], c.later[1:]...)
		}
		c.later = append(c.later, tok)
	}
	s.mirMu.Unlock()
	defer close(me.done)
	if prev != nil {
		s.mirrors.chained.Add(1)
	}
	if prev != nil && (fresh == 0 || st == nil) {
		// No stream to keep the order: send after the write before is
		// through (and answer from the copy only if it went through).
		if err := waitFor(ctx, prev); err != nil {
			clear(out)
			return 0, err
		}
		if !prev.ok {
			clear(out)
			return codeConflict, nil
		}
	}
	if fresh == 0 {
		code, err := s.mirrorUnchanged(ctx, c, m, expect)
		if code != codeDone {
			clear(out)
		}
		return code, err
	}
	var g []int64
	var gerr error
	if st != nil {
		g, gerr, err = streamReply(ctx, sent, sendErr)
	} else {
		g, gerr, err = w.sendPipelined(ctx, s.client, lastKey, gateKeys, gateArgs, m.holdKey())
	}
	code := int64(codeDone)
	switch {
	case gerr != nil || err == nil && (len(g) != 2 || g[1] < 0):
		// Unknown whether it was written: the copy cannot say.
		if gerr != nil {
			err = s.scriptErr(gerr)
		} else {
			err = fmt.Errorf("gate reply %v", g)
		}
	case len(g) != 2: // err: the transaction failed
	case g[0] != codeDone: // the SETRANGEs met the gate's set: WRONGTYPE, nothing written
		m.lastFill.Store(uint64(g[1]))
		code, err = g[0], nil
	default:
		m.lastFill.Store(uint64(g[1])) // err: a SETRANGE failed after the gate let it through
	}
	prevFailed := false
	if prev != nil && (code == codeWritten || code == codeDone && err == nil) {
		// Refused: chained on a write that failed (the stream keeps
		// order: it overtook nothing), or another client wrote between
		// them. Let through: the answers count on the bits of the write
		// before, which went through only if it says so.
		ok, werr := prev.through(ctx)
		switch {
		case werr != nil:
			code, err = codeDone, werr
		case !ok && code == codeDone:
			err = errors.New("redisfilter: the mirrored write before this one failed: its bits may be missing")
		case !ok:
			prevFailed = true // refused for prev's sake, not another client's
		}
	}
	s.mirMu.Lock()
	defer s.mirMu.Unlock()
	if code == codeDone && err == nil {
		me.ok = true
		if c.tail == me {
			c.tail = nil
		}
		s.mirPause = 0
		return codeDone, nil
	}
	clear(out)
	if s.mir == c {
		switch {
		case code == codeWritten && prevFailed:
			s.dropMirror() // prev's caller pauses, if it was a conflict
		case code == codeWritten:
			s.conflict()
		case errors.Is(err, errUnsent) || errors.Is(err, errStream):
			s.pauseMirror()
		default:
			s.dropMirror()
		}
	}
	if code == codeWritten || errors.Is(err, errUnsent) {
		// Another client wrote, or the write never reached Redis: the
		// batch goes as a watched write.
		return codeConflict, nil
	}
	return code, err // errStream: it may or may not have run, as after any network error
}

// mirrorUnchanged answers a batch whose items are all in the copy: they
// are in the filter if its token is still the one the copy was as of,
// expect, or that of a write of ours chained after it (bits are never
// cleared under one id). Otherwise the copy is dropped and the batch
// goes as a watched write.
func (s *Scalable) mirrorUnchanged(ctx context.Context, c *mirror, m *scalableMeta, expect string) (int64, error) {
	st := s.mirrorState(ctx, s.client)
	if err := st.Err(); err != nil {
		return 0, err
	}
	token, ok := sameState(st, m)
	s.mirMu.Lock()
	defer s.mirMu.Unlock()
	if ok && c.after(expect, token) { // a later write of ours may have gone through meanwhile
		return codeDone, nil
	}
	if s.mir == c {
		s.conflict()
	}
	return codeConflict, nil
}

// merge answers the batch from the copy, in batch order, and sets the
// new items' bits in the copy's last sub-filter, recording the bytes it
// changes. It returns the number of new items, marked in out.
//
// It first works out every item's offsets in the last sub-filter and
// loads a byte of each: the loads do not depend on each other, so the
// cache misses of a large copy overlap instead of coming one by one.
func (w *mirrorWrite) merge(c *mirror, m *scalableMeta, hashes []bloom.Hash, out []bool) int {
	last := len(m.subs) - 1
	sz := m.subs[last]
	bits, k := c.subs[last], int(sz.K)
	blocked := sz.Layout == bloom.Blocked
	w.offs = w.offs[:0]
	var touch byte
	for _, h := range hashes {
		w.offs = sz.Offsets(h, w.offs)
		touch ^= bits[w.offs[len(w.offs)-1]>>3]
	}
	w.touch = touch
	w.changed, w.spans = w.changed[:0], w.spans[:0]
	fresh := 0
	var older []uint64
	for i, h := range hashes {
		if last > 0 {
			if older = w.inOlder(c, m, h, older); older == nil {
				continue
			}
		}
		lo, hi := len(bits), -1
		for _, o := range w.offs[i*k : (i+1)*k] {
			at, bit := int(o>>3), byte(0x80)>>(o&7)
			if bits[at]&bit == 0 {
				bits[at] |= bit
				lo, hi = min(lo, at), max(hi, at)
				if !blocked {
					w.changed = append(w.changed, at)
				}
			}
		}
		if hi >= 0 {
			if blocked {
				w.spans = append(w.spans, span{lo, hi})
			}
			out[i] = true
			fresh++
		}
	}
	if !blocked {
		w.spansOfChanged()
	}
	w.buf = w.buf[:0]
	for _, sp := range w.spans {
		w.buf = append(w.buf, bits[sp.from:sp.to+1]...)
	}
	return fresh
}

// spansOfChanged turns the changed bytes of a classic sub-filter, spread
// over the whole of it, into spans of bytes at most mergeGap apart.
func (w *mirrorWrite) spansOfChanged() {
	slices.Sort(w.changed)
	for i := 0; i < len(w.changed); {
		from, to := w.changed[i], w.changed[i]
		for i++; i < len(w.changed) && w.changed[i]-to <= mergeGap; i++ {
			to = w.changed[i]
		}
		w.spans = append(w.spans, span{from, to})
	}
}

// inOlder returns nil if h has all its bits in one of the sub-filters
// before the last, else buf (a scratch buffer for the offsets).
func (w *mirrorWrite) inOlder(c *mirror, m *scalableMeta, h bloom.Hash, buf []uint64) []uint64 {
	buf = buf[:0:cap(buf)]
	if buf == nil {
		buf = make([]uint64, 0, bloom.MaxK)
	}
	for i := len(m.subs) - 2; i >= 0; i-- {
		buf = m.subs[i].Offsets(h, buf[:0])
		if hasBits(c.subs[i], buf) {
			return nil
		}
	}
	return buf
}

// hasBits reports whether all bits at offs (SETBIT numbering) are set.
func hasBits(b []byte, offs []uint64) bool {
	for _, o := range offs {
		if b[o>>3]&(0x80>>(o&7)) == 0 {
			return false
		}
	}
	return true
}

// sendPipelined sends w's transaction through go-redis (TxPipelined),
// its SETRANGEs' data pointing into w.buf, and returns the gate's reply,
// or its error, and the transaction's error.
func (w *mirrorWrite) sendPipelined(ctx context.Context, client redis.UniversalClient, key string, gateKeys, gateArgs []string, hold string) ([]int64, error, error) {
	args := make([]any, len(gateArgs))
	for i, a := range gateArgs {
		args[i] = a
	}
	var gate *redis.Cmd
	_, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		gate = p.Eval(ctx, gateLua, gateKeys, args...)
		w.queue(ctx, p, &key)
		p.Eval(ctx, ungateLua, []string{key, hold})
		return nil
	})
	g, gerr := gate.Int64Slice()
	if gerr != nil && err != nil && (gate.Err() == nil || errors.Is(err, gate.Err())) {
		gerr = nil // the transaction's error, not the gate's
	}
	return g, gerr, err
}

// sendStream writes w's transaction on st, in order after the writes
// before it; streamReply then waits for its reply and returns as
// sendPipelined does.
func (w *mirrorWrite) sendStream(ctx context.Context, st *txStream, key string, gateKeys, gateArgs []string, hold string) (*txReply, error) {
	b := st.getBuf()
	defer st.putBuf(b)
	*b = w.appendTx(*b, key, gateKeys, gateArgs, hold)
	return st.send(ctx, *b, len(w.spans))
}

func streamReply(ctx context.Context, r *txReply, err error) ([]int64, error, error) {
	if err == nil {
		r, err = r.wait(ctx)
	}
	switch {
	case err != nil:
		return nil, nil, err
	case r.gateEr != nil:
		return nil, r.gateEr, nil
	}
	return r.gate, nil, r.setErr
}

// queue adds to p one SETRANGE of key per span of changed bytes, its
// data w's copy of them (unchanged until the pipeline has run). A
// blocked sub-filter's spans are one per new item, each within its
// block, unsorted: two items in one block (rare in a large filter) write
// it twice, with the same bytes.
func (w *mirrorWrite) queue(ctx context.Context, p redis.Pipeliner, key *string) {
	n := len(w.spans)
	w.nums, w.data = slices.Grow(w.nums[:0], n)[:n], slices.Grow(w.data[:0], n)[:n]
	w.args = slices.Grow(w.args[:0], 4*n)[:4*n]
	at := 0
	for i, sp := range w.spans {
		size := sp.to - sp.from + 1
		w.nums[i], w.data[i] = int64(sp.from), unsafe.String(&w.buf[at], size)
		at += size
		a := w.args[4*i : 4*i+4 : 4*i+4]
		a[0], a[1], a[2], a[3] = "SETRANGE", key, &w.nums[i], &w.data[i]
		_ = p.Process(ctx, redis.NewIntCmd(ctx, a...))
	}
}
