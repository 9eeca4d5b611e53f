package server

import (
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/cuckoo"
)

// journal receives the changes of the memory backend, each as one
// command in canonical form (see memstore.replay), in the order they take
// effect; append is called under the locks of the keys it changes.
type journal interface {
	append(args ...[]byte)
	// appendAdd is append of the short record cmd key item (BF.ADD or
	// CF.ADD): an add of one item to a filter that existed, which the
	// log may merge with the adds next to it (aof_merge.go).
	appendAdd(cmd, key, item []byte)
	// appendAdds is appendAdd of each of items in turn, as one change:
	// the new items of a BF.MADD or BF.INSERT to a filter that existed.
	appendAdds(cmd, key []byte, items [][]byte)
}

// memstore is the embedded backend: filters in process memory
// (keyspace), every change journaled for the append-only log.
//
// Memory: every filter's bit arrays count against maxMemory (0: no
// limit), reserved before they are allocated (creation, growth through
// the filter's grow hook, LOADCHUNK), and one filter may not pass
// maxFilter; a request beyond either gets errNoMemory and changes
// nothing.
type memstore struct {
	ks        *keyspace
	layout    bloom.Layout // of new filters (layoutFor); Blocked while loading
	maxFilter uint64
	charge    func(extra uint64) error // every filter's grow hook: m.reserve
	maxMemory uint64
	used      atomic.Uint64          // bytes of all bit arrays
	journal   journal                // nil: not journaled (loading, or no persistence)
	lastGlob  atomic.Pointer[glob]   // the last SCAN/KEYS pattern, compiled
	makers    makers                 // of new filters (memstore_make.go)
	values    [keyShards]shardValues // allocated for new filters, by shard (under its lock)
}

// newMemstore makes an empty memory backend with its limits (maxFilter
// 0: bloom.DefaultMaxBytes; maxMemory 0: none) on the real clock.
func newMemstore(maxFilter, maxMemory uint64) *memstore {
	return newMemstoreAt(maxFilter, maxMemory, time.Now)
}

// newLoadingMemstore makes an empty memory backend to load a data
// directory into (docs/DESIGN.md §8): the per-filter limit in force, no
// total limit, the clock stopped. serve then starts it.
func newLoadingMemstore(maxFilter uint64) *memstore {
	return newMemstoreAt(maxFilter, 0, stoppedClock)
}

// serve ends the loading: from now on the total limit maxMemory holds,
// new filters take layout and the keyspace's clock is now. (While loading,
// a record that creates a filter by its parameters made a filter in
// Bloomery's layout: the other layout's creations are journaled as its
// dump header.) It is called once, before the store is shared with any
// other goroutine.
func (m *memstore) serve(maxMemory uint64, layout bloom.Layout, now func() time.Time) {
	m.maxMemory, m.layout = maxMemory, layout
	m.ks.startClock(now)
}

func newMemstoreAt(maxFilter, maxMemory uint64, now func() time.Time) *memstore {
	if maxFilter == 0 {
		maxFilter = bloom.DefaultMaxBytes
	}
	m := &memstore{ks: newKeyspace(now), layout: bloom.Blocked, maxFilter: maxFilter, maxMemory: maxMemory}
	m.charge = m.reserve
	m.ks.dropped = func(e *entry) { m.used.Add(-e.bytes()) }
	// A key the keyspace deletes by itself (expired) is journaled as a
	// DEL, under its lock and so in order with its other records: replay
	// (which runs with the clock stopped) deletes it at the same point of
	// the history, and a write that re-creates the key is durable only
	// once the DEL before it is (waitDurable waits for every record
	// appended so far). As Redis propagates a DEL when a key expires.
	m.ks.expiring = func(key string) { m.log([]byte("DEL"), []byte(key)) }
	return m
}

// reserve takes n bytes from the memory budget, or fails with errNoMemory.
func (m *memstore) reserve(n uint64) error {
	for {
		used := m.used.Load()
		if m.maxMemory != 0 && (n > m.maxMemory || used > m.maxMemory-n) {
			return errNoMemory
		}
		if m.used.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

// adopt prepares a filter for the keyspace: its growth is charged to the
// budget (one hook for every filter: a closure per key cost 40 bytes a
// key). The per-filter limit is the filter's own (WithMaxBytes: every
// filter is made or loaded with it).
func (m *memstore) adopt(f *bloom.Scalable) *entry {
	f.SetGrowHook(m.charge)
	return &entry{filter: f}
}

// filterLayout is the layout of new filters cfg asks for.
func filterLayout(cfg Config) bloom.Layout {
	if cfg.FilterLayout == LayoutRedisBloom {
		return bloom.RedisBloom
	}
	return bloom.Blocked
}

// minBloomeryRate is the lowest first-sub-filter rate of a filter in
// Bloomery's layout: 2^-64, below which the optimal number of probes,
// log2(1/p), passes Bloomery's 64 (bloom.MaxK) and its filters grow
// without bound (a blocked filter at 1e-30 needs 200 KB for one item).
const minBloomeryRate = 0x1p-64

// layoutFor is the layout of a new filter made with o: the server's, but
// RedisBloom's for a rate too small for Bloomery's (minBloomeryRate),
// which RedisBloom makes with up to 1075 probes (docs/SERVER.md, "Filter
// layouts").
func (m *memstore) layoutFor(o createOpts) bloom.Layout {
	if o.firstRate() < minBloomeryRate {
		return bloom.RedisBloom
	}
	return m.layout
}

func (m *memstore) log(args ...[]byte) {
	if m.journal != nil {
		m.journal.append(args...)
	}
}

// logAdd journals the short record cmd key item (journal.appendAdd).
func (m *memstore) logAdd(cmd []byte, key string, item []byte) {
	if m.journal != nil {
		m.journal.appendAdd(cmd, readOnlyBytes(key), item)
	}
}

// logAdds journals the adds of items to key's filter, which existed
// (journal.appendAdds).
func (m *memstore) logAdds(cmd []byte, key string, items [][]byte) {
	if m.journal != nil {
		m.journal.appendAdds(cmd, readOnlyBytes(key), items)
	}
}

func (m *memstore) Stats() backendStats {
	return backendStats{Keys: int64(m.ks.len()), Expires: m.ks.expires.Load(), FilterBytes: m.used.Load()}
}

// Close has nothing to release: the filters are the process's memory,
// and their durability is the server's (Server.persist).
func (m *memstore) Close() error { return nil }

func fmtFloat(f float64) []byte { return strconv.AppendFloat(nil, f, 'g', -1, 64) }
func fmtUint(n uint64) []byte   { return strconv.AppendUint(nil, n, 10) }
func fmtInt(n int64) []byte     { return strconv.AppendInt(nil, n, 10) }

// restore puts a filter read from a snapshot into the keyspace, without
// journaling it: errNoMemory, and nothing changes, when the filter passes
// maxFilter (or the budget, which a loading store does not have).
func (m *memstore) restore(key string, f *bloom.Scalable, expireAt int64) error {
	return m.restoreEntry(key, f.Bytes(), expireAt, func() (*entry, string, error) { return m.adopt(f), key, nil })
}

// restoreState is restore for a Bloom filter read from a snapshot as
// its shape's state (snapshot_shapes.go). Where BF.ADD would have made
// the filter in a value of its own with the key's bytes (fitsValue), it
// is decoded into such a value: a key loaded from a snapshot is then one
// object, as before the restart, not four (key, entry, filter, bits),
// for the collector to mark and the next snapshot to walk.
func (m *memstore) restoreState(key []byte, sl *bloom.StateLoader, state []byte, expireAt int64) error {
	// k, over key's bytes, is only hashed and copied into the value,
	// and not kept past this call: it saves an allocation a key.
	k := unsafe.String(unsafe.SliceData(key), len(key))
	sz := sl.Sizing()
	if !fitsValue(sz, k) {
		f, err := sl.Load(state)
		if err != nil {
			return err
		}
		return m.restore(string(key), f, expireAt)
	}
	return m.restoreEntry(k, sz.Bytes(), expireAt, func() (*entry, string, error) {
		e, bits, stored := m.values[m.ks.shardOf(k)].inValue(int(sz.Bits/64), k)
		if err := sl.LoadInto(e.filter, bits, state); err != nil {
			return nil, "", err
		}
		e.filter.SetGrowHook(m.charge)
		return e, stored, nil
	})
}

// restoreCuckoo is restore for a cuckoo filter.
func (m *memstore) restoreCuckoo(key string, f *cuckoo.Filter, expireAt int64) error {
	return m.restoreEntry(key, f.Bytes(), expireAt, func() (*entry, string, error) {
		f.SetGrowHook(m.charge)
		return newCuckooEntry(f), key, nil
	})
}

// restoreEntry makes an entry of size bytes with adopt, under key's
// lock, charges it, and stores it under the key adopt returns (the
// keyspace's string for key).
func (m *memstore) restoreEntry(key string, size uint64, expireAt int64, adopt func() (*entry, string, error)) error {
	if size > m.maxFilter {
		return errNoMemory
	}
	defer m.ks.lockKey(key).Unlock()
	e, stored, err := adopt()
	if err != nil {
		return err
	}
	if err := m.reserve(size); err != nil {
		return err
	}
	e.expireAt = expireAt
	m.ks.set(stored, e)
	return nil
}
