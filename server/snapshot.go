package server

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/cuckoo"
	"github.com/bloomery/bloom/internal/atomicfile"
)

// A snapshot is the keyspace at one instant, the cut, written without
// stopping the world for long (see persist.go for when and why):
//
//  1. cut: with every key locked, the log is rotated (the old log flushed
//     and fsynced, a new one opened: later changes go there) and each
//     shard's slot array is copied as it is (a memmove into arrays made
//     and faulted in before the locks), with the expiries of a shard that
//     has expiring keys; each key is pending. Positions are a key's for as
//     long as it lives, and shards are not compacted until the snapshot
//     is written, so a key still at its position holds the same entry.
//  2. While pending, a view of an entry's filter (bloom.ScalableView) is
//     taken by the keyspace's modifying hook, just before its first
//     change after the cut. A view copies nothing when it is taken; the
//     filter then copies each 4 KiB page into it before changing the
//     page, unless the writer has written the page already.
//  3. The writer takes each pending entry's view (or takes one itself, if
//     the filter has not changed since the cut) and encodes it with no
//     key lock held. Keys deleted or renamed after the cut are written as
//     they were at the cut: the cut is what counts.
//
// So a snapshot costs memory only for the pages changed while it is
// written (issue 11: a 4.49 GB filter holding 100 items used to be copied
// whole, twice its size at peak), and the file is written sparse
// (snapshot_sparse.go): runs of zero bytes become holes.
//
// The hook and the writer meet on a mutex of the position's cut state,
// not on the key's shard lock. The hook finds a key's position (its
// index) and acts only if the entry there at the cut is the one about to
// change; a key renamed after the cut leaves its position, so renaming
// calls the hook first, and the entry's filter is then taken as it was.
// A key made after the cut at a position freed since holds another
// entry, and is not the snapshot's.
//
// The cut's pause: at 10⁶ small filters it was 106–127 ms (a list of
// the keys and a map from entry to key built under the locks), and
// 414 ms at 1.5·10⁶ under load, its allocations meeting the memory
// limit's collections; now a copy of the slot arrays (docs/BENCHMARKS.md,
// "The cut's pause").
//
// File (all integers little-endian; docs/PERSISTENCE.md, "Snapshot
// format"):
//
//	header   "BLOOMSNP", u32 version 2, u32 flags 0, u64 generation,
//	         i64 creation time (Unix ms)                         32 bytes
//	record   'K', u32 key length, key, i64 expiry (Unix ms, 0 none),
//	         u64 filter length, the filter (bloom kind-2 encoding),
//	         u32 CRC-32C of the record from 'K' to here
//	         or 'C', the same for a cuckoo filter (its kind-4 encoding)
//	         or 'S', a shape (version 2; snapshot_shapes.go)
//	         or 'B', a small Bloom filter as its shape's id and its state
//	trailer  'E', u64 number of keys, u32 CRC-32C of the file before it

const (
	snapMagic     = "BLOOMSNP"
	snapVersion   = 2 // 1: no shapes ('S', 'B'), which version 2 added
	snapHeaderLen = 32
	tagKey        = 'K'
	tagCuckoo     = 'C'
	tagEnd        = 'E'
)

var le = binary.LittleEndian

// snapCut is a snapshot in progress: the keys at the cut.
type snapCut struct {
	gen     uint64 // the snapshot's generation: the log opened at the cut
	created time.Time
	dirty   int64 // changes counted before the cut
	now     int64 // Unix ms at the cut: keys expired then are not written
	keys    int   // the keys written (set by writeSnapshot)
	shards  [keyShards]cutShard
}

// cutShard is one shard at the cut, by position.
type cutShard struct {
	slots  []slot     // the slot array at the cut (read-only after it)
	expire []int64    // the expiries, when the shard had expiring keys (read-only)
	state  []cutState // what became of each key since
}

// cutState is one position's key since the cut.
type cutState struct {
	mu    sync.Mutex
	taken atomic.Bool // view is the filter as at the cut, or it was written
	tag   byte        // tagKey, or tagCuckoo for a cuckoo filter: set when viewed
	view  snapView    // made by keep
}

// cutKey is a key at the cut: its name, entry and expiry then, and its
// state since. Once the writer has taken the key, it clears the key's
// slot in the cut (under the state's mutex, under which the hook reads
// it), so that a key deleted meanwhile is not held in memory until the
// snapshot ends.
type cutKey struct {
	name     string
	e        *entry
	expireAt int64
	sl       *slot // in the cut's copy
	*cutState
}

// at returns the key at position pos of shard i, and whether one was
// there at the cut, unexpired.
func (c *snapCut) at(i, pos int) (cutKey, bool) {
	cs := &c.shards[i]
	if pos < 0 || pos >= len(cs.slots) || cs.slots[pos].e == nil {
		return cutKey{}, false
	}
	sl := &cs.slots[pos]
	k := cutKey{name: sl.key, e: sl.e, sl: sl, cutState: &cs.state[pos]}
	if cs.expire != nil {
		if k.expireAt = cs.expire[pos]; k.expireAt != 0 && k.expireAt <= c.now {
			return cutKey{}, false
		}
	}
	return k, true
}

// snapView is a filter as it was at the cut: a copy-on-write view of a
// Bloom filter (bloom.ScalableView) or of a cuckoo filter (cuckoo.View).
type snapView interface {
	encodedFilter
	Close()
}

// keep takes a view of the filter as it is now, unless one was taken: the
// hook calls it before a change, the writer when it gets to the key.
// Either way no change to the filter runs meanwhile: every change calls
// the hook first, which waits for k.mu here, and once the key is taken
// it no longer comes here. Both kinds of view are copy-on-write: they
// copy nothing yet.
func (k cutKey) keep() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keepLocked()
}

// keepLocked is keep with k.mu held.
func (k cutKey) keepLocked() {
	if !k.taken.Load() {
		if f := k.e.cuckoo(); f != nil {
			k.view, k.tag = cuckooView(f), tagCuckoo
		} else {
			k.view, k.tag = k.e.filter.View(), tagKey
		}
		k.taken.Store(true)
	}
}

// cuckooView is a copy-on-write view of f, or, should f have a view open
// already (a snapshot that failed to close one), a copy of its encoding.
func cuckooView(f *cuckoo.Filter) snapView {
	if v, err := f.View(); err == nil {
		return v
	}
	return cuckooCopy(encodeCuckoo(f))
}

// cuckooCopy is a cuckoo filter's encoding (cuckooView's fallback).
type cuckooCopy []byte

func (b cuckooCopy) EncodedSize() int64 { return int64(len(b)) }
func (b cuckooCopy) Close()             {}
func (b cuckooCopy) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b)
	return int64(n), err
}

// encodeCuckoo is f's kind-4 encoding (writing to memory cannot fail).
func encodeCuckoo(f *cuckoo.Filter) []byte {
	b, err := f.MarshalBinary()
	if err != nil {
		panic("server: encode a cuckoo filter: " + err.Error())
	}
	return b
}

// take returns the filter as it was at the cut and forgets it; the
// caller closes the view.
func (k cutKey) take() snapView {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keepLocked()
	v := k.view
	k.view = nil
	k.sl.e, k.sl.key = nil, "" // only the writer clears a slot: it reads them without the mutex
	return v
}

// smallSnapFilter is the size up to which the writer encodes a filter
// that no change has reached since the cut straight from the filter
// (writeSmall) instead of through a copy-on-write view: below it,
// setting a view up and tearing it down cost more than the copy (a
// keyspace of small filters spent 15% of its CPU on views; issue 11).
const smallSnapFilter = 16 << 10

// writeSmall writes the key's record straight from its filter when no
// change has reached the filter since the cut and it is small, and
// reports whether it did. It holds k.mu meanwhile, so a change that comes
// now waits in the hook (keep) until the record is written, then finds
// it taken.
func (k cutKey) writeSmall(sw *snapWriter) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.taken.Load() {
		return false
	}
	if f := k.e.filter; f == nil {
		cf := k.e.cuckoo()
		if cf.Bytes() > smallSnapFilter {
			return false
		}
		k.tag = tagCuckoo
		sw.record(k.tag, k.name, k.expireAt, cf)
	} else {
		if f.Bytes() > smallSnapFilter {
			return false
		}
		k.tag = tagKey
		sw.smallRecord(k.name, k.expireAt, f)
	}
	k.taken.Store(true)
	k.sl.e, k.sl.key = nil, ""
	return true
}

// drop gives up the keys the snapshot did not write (it failed): it
// closes their views, if any, and marks them taken, so that no later
// change opens one (a view left open would go on copying pages).
func (c *snapCut) drop() {
	for i := range c.shards {
		for pos := range c.shards[i].state {
			st := &c.shards[i].state[pos]
			st.mu.Lock()
			if st.view != nil {
				st.view.Close()
				st.view = nil
			}
			st.taken.Store(true)
			st.mu.Unlock()
		}
	}
}

// modifying is the keyspace's hook, called under a key's shard lock
// before its filter changes in place.
func (p *persistence) modifying(key string, e *entry) {
	c := p.cut.Load()
	if c == nil {
		return
	}
	shard, pos := p.ks.position(key)
	c.keepAt(shard, pos, e)
}

// keepAt keeps the filter of e, at position pos of shard i now, if e is
// the entry there at the cut and not yet taken. The slot is read under
// the state's mutex: the writer clears it there once it takes the key.
func (c *snapCut) keepAt(i, pos int, e *entry) {
	cs := &c.shards[i]
	if pos < 0 || pos >= len(cs.slots) {
		return
	}
	st := &cs.state[pos]
	if st.taken.Load() {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if k, ok := c.at(i, pos); ok && k.e == e {
		k.keepLocked()
	}
}

// takeCut is step 1. It returns how long the keys were locked. With
// final (close), every later append is refused: the snapshot is the last
// state.
func (p *persistence) takeCut(final bool) (*snapCut, time.Duration, error) {
	// Most of the log goes to disk before the world stops, with everysec
	// while the writers go on (aof_sync.go). With no, syncBehind would
	// only write: the fsync is made here.
	if p.policy != fsyncNo {
		if err := p.syncBehind(); err != nil {
			return nil, 0, err
		}
	} else {
		p.syncMu.Lock()
		p.wmu.Lock()
		err := p.flushLocked(true)
		p.wmu.Unlock()
		p.syncMu.Unlock()
		if err != nil {
			return nil, 0, err
		}
	}
	c := &snapCut{}
	p.ks.prepareCut(c)
	start := time.Now()
	unlock := p.ks.lockAll()
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	p.wmu.Lock()
	defer p.wmu.Unlock()
	err := p.flushLocked(true)
	if err == nil {
		err = p.openLog(p.gen + 1)
	}
	if err != nil {
		unlock()
		return nil, 0, err
	}
	p.dirDirty = true
	c.gen, c.created = p.gen, time.Now()
	p.ks.cut(c)
	p.mu.Lock()
	c.dirty = p.dirty
	p.closed = p.closed || final
	p.mu.Unlock()
	p.cut.Store(c)
	unlock()
	pause := time.Since(start)
	p.flushLocked(true) // the new log's directory entry; a failure is reported to waiters
	return c, pause, nil
}

// writeSnapshot is steps 3 and 4: it writes snapshot.G.bdb through
// internal/atomicfile (a temporary file beside it, fsync, rename, fsync of
// the directory). It returns the file's size and its weight for the
// automatic snapshots' rule (snapshot_shapes.go).
func (p *persistence) writeSnapshot(c *snapCut) (size, weight int64, err error) {
	defer func() {
		if err != nil {
			c.drop() // the keys not written
		}
	}()
	name := filepath.Join(p.dir, snapshotName(c.gen))
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return 0, 0, fmt.Errorf("server: create snapshot: %w", err)
	}
	defer f.Abort()
	sw := &snapWriter{w: newSparseWriter(f)}
	sw.header(c.gen, c.created)
write:
	for i := range c.shards {
		for pos := range c.shards[i].slots {
			if sw.err != nil {
				break write // drop (above) gives up the rest
			}
			c.prefetch(i, pos)
			k, ok := c.at(i, pos)
			if !ok {
				continue
			}
			if uint64(len(k.name)) > math.MaxUint32 {
				sw.err = fmt.Errorf("a key of %d bytes is too long for a snapshot", len(k.name))
				break write
			}
			if !k.writeSmall(sw) {
				v := k.take()
				sw.record(k.tag, k.name, k.expireAt, v)
				v.Close()
			}
			c.keys++
		}
	}
	sw.trailer(uint64(c.keys))
	err = sw.err
	if err == nil {
		err = sw.w.Flush()
	}
	if err == nil {
		err = f.Commit()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("server: write snapshot %s: %w", name, err)
	}
	return sw.n, sw.n + sw.unshaped, nil
}

// snapWriter writes a snapshot, keeping the CRCs of the file and of the
// current record. Its first error sticks.
type snapWriter struct {
	w        *sparseWriter
	n        int64
	all, rec uint32
	err      error
	num      [8]byte
	buf      []byte // a record's head, or smallRecord's whole record
	shapes   snapShapes
	// unshaped is what version 1 would have written beyond n, without
	// shapes: n + unshaped is the weight the automatic snapshots' rule
	// counts (snapshot_shapes.go).
	unshaped int64
}

func (sw *snapWriter) Write(b []byte) (int, error) {
	n, err := sw.put(b)
	sw.rec = crc32.Update(sw.rec, castagnoli, b[:n])
	return n, err
}

// put writes b, keeping the file's CRC but not the record's.
func (sw *snapWriter) put(b []byte) (int, error) {
	if sw.err != nil {
		return 0, sw.err
	}
	n, err := sw.w.Write(b)
	sw.all = crc32.Update(sw.all, castagnoli, b[:n])
	sw.n += int64(n)
	sw.err = err
	return n, err
}

func (sw *snapWriter) u32(v uint32) { sw.Write(le.AppendUint32(sw.num[:0], v)) }
func (sw *snapWriter) u64(v uint64) { sw.Write(le.AppendUint64(sw.num[:0], v)) }

func (sw *snapWriter) header(gen uint64, created time.Time) {
	sw.Write([]byte(snapMagic))
	sw.u32(snapVersion)
	sw.u32(0)
	sw.u64(gen)
	sw.u64(uint64(created.UnixMilli()))
}

// encodedFilter is a filter as a snapshot writes it: a view, or a
// filter no change can reach meanwhile.
type encodedFilter interface {
	EncodedSize() int64
	WriteTo(w io.Writer) (int64, error)
}

func (sw *snapWriter) record(tag byte, key string, expireAt int64, f encodedFilter) {
	size := f.EncodedSize()
	sw.rec = 0
	sw.buf = appendRecordHead(sw.buf[:0], tag, key, expireAt, size)
	sw.Write(sw.buf)
	n, err := f.WriteTo(sw)
	if err == nil {
		sw.checkSize(key, n, size)
	}
	sw.u32(sw.rec)
}

// smallRecord writes the record of a Bloom filter small enough to encode
// in memory: built in sw's buffer, then checksummed and written at once
// (the record's fields one by one cost a write and two checksum calls
// each; issue 11). A filter of one sub-filter is written as its shape and
// state (stateRecord); one of more, or past the shapes' limit, whole.
func (sw *snapWriter) smallRecord(key string, expireAt int64, f *bloom.Scalable) {
	if sw.stateRecord(key, expireAt, f) {
		return
	}
	size := f.EncodedSize()
	b := appendRecordHead(sw.buf[:0], tagKey, key, expireAt, size)
	at := len(b)
	b, err := f.AppendBinary(b)
	if err == nil {
		sw.checkSize(key, int64(len(b)-at), size)
	} else if sw.err == nil {
		sw.err = fmt.Errorf("key %q: %w", key, err)
	}
	b = le.AppendUint32(b, crc32.Checksum(b, castagnoli))
	sw.buf = b
	sw.put(b)
}

// appendRecordHead appends the fields of a record before its filter's
// encoding: the tag, the key's length and bytes, the expiry and the
// encoding's length, size.
func appendRecordHead(b []byte, tag byte, key string, expireAt, size int64) []byte {
	return le.AppendUint64(appendKeyHead(b, tag, key, expireAt), uint64(size))
}

// appendKeyHead appends the fields every key's record starts with (the
// reader's keyHead): the tag, the key's length and bytes, the expiry.
func appendKeyHead(b []byte, tag byte, key string, expireAt int64) []byte {
	b = append(b, tag)
	b = le.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	return le.AppendUint64(b, uint64(expireAt))
}

// checkSize fails the snapshot if key's filter encoded to n bytes where
// its record said size.
func (sw *snapWriter) checkSize(key string, n, size int64) {
	if n != size && sw.err == nil {
		sw.err = fmt.Errorf("key %q: encoded %d bytes, expected %d", key, n, size)
	}
}

func (sw *snapWriter) trailer(count uint64) {
	sw.Write([]byte{tagEnd})
	sw.u64(count)
	sw.u32(sw.all)
}
