package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/bloomery/bloom"
)

// The memory backend's Bloom filters (bloomStore); the dumps are in
// memdump.go.

// bloomOf returns key's Bloom filter entry, nil when the key is missing,
// errWrongType when it holds a cuckoo filter. The caller holds key's
// lock.
func (m *memstore) bloomOf(key string) (*entry, error) {
	e := m.ks.get(key)
	if e != nil && e.filter == nil {
		return nil, errWrongType
	}
	return e, nil
}

func (m *memstore) Reserve(_ context.Context, key string, o createOpts) error {
	defer m.ks.lockKey(key).Unlock()
	if e, err := m.bloomOf(key); err != nil || e != nil {
		return cmp.Or(err, error(errItemExists))
	}
	_, fm, rec, err := m.createKey(key, o)
	if err != nil {
		return err
	}
	if rec == nil {
		rec = append([][]byte{[]byte("BF.RESERVE"), []byte(key)}, fm.reserve...)
	}
	m.log(rec...)
	return nil
}

// createKey makes key, which is missing, a new filter made with o, and
// returns its entry, its maker and the record that journals the creation
// when the filter's parameters cannot (creationRecord); the caller holds
// key's lock and journals the creation.
func (m *memstore) createKey(key string, o createOpts) (*entry, *filterMaker, [][]byte, error) {
	fm, err := m.makerFor(o)
	if err != nil {
		return nil, nil, nil, err
	}
	e, stored, err := m.create(fm, key)
	if err != nil {
		return nil, nil, nil, err
	}
	rec, err := m.creationRecord(key, e.filter)
	if err != nil {
		m.used.Add(-fm.bytes)
		return nil, nil, nil, err
	}
	m.ks.insert(stored, e)
	return e, fm, rec, nil
}

// creationRecord is the journal record that makes key's new, empty
// filter f again on replay when its parameters cannot say it: for a
// filter in RedisBloom's layout, BF.LOADCHUNK key 1 with its dump header
// (which records the layout and every parameter). nil for Bloomery's
// layout, which the records of BF.RESERVE and BF.INSERT make (replay
// runs in that layout: memstore.serve).
func (m *memstore) creationRecord(key string, f *bloom.Scalable) ([][]byte, error) {
	if m.journal == nil || f.Layout() != bloom.RedisBloom {
		return nil, nil
	}
	_, hdr, err := f.DumpChunk(0)
	if err != nil {
		return nil, fmt.Errorf("server: journal a new filter: %w", err)
	}
	return [][]byte{[]byte("BF.LOADCHUNK"), []byte(key), []byte("1"), hdr}, nil
}

// scalingArgs are o's EXPANSION or NONSCALING arguments.
func scalingArgs(o createOpts) [][]byte {
	if o.nonScaling {
		return [][]byte{[]byte("NONSCALING")}
	}
	return [][]byte{[]byte("EXPANSION"), fmtUint(o.expansion)}
}

func (m *memstore) Add(_ context.Context, key string, items [][]byte, create *createOpts, res []addResult) (int, error) {
	defer m.ks.lockKey(key).Unlock()
	return m.addLocked(key, items, create, res)
}

// addLocked is Add with key's lock held.
func (m *memstore) addLocked(key string, items [][]byte, create *createOpts, res []addResult) (int, error) {
	e, err := m.bloomOf(key)
	if err != nil {
		return 0, err
	}
	var fm *filterMaker // of a filter created here and journaled with the items
	if e == nil {
		if create == nil {
			return 0, errNotFound
		}
		var rec [][]byte
		if e, fm, rec, err = m.createKey(key, *create); err != nil {
			return 0, err // the whole reply, not an item's
		}
		if rec != nil {
			m.log(rec...)
			fm = nil
		}
	} else {
		m.ks.modify(key, e)
	}
	// The journal gets one BF.INSERT of the items that were new (the
	// others changed nothing), creating the filter as it was created
	// unless its creation has a record of its own (creationRecord).
	var args [][]byte
	if m.journal != nil {
		pooled := journalArgs.Get().(*[][]byte)
		defer func() { clear(args); *pooled = args[:0]; journalArgs.Put(pooled) }()
		args = append((*pooled)[:0], wordInsert, readOnlyBytes(key))
		if fm != nil {
			args = append(args, fm.insert...)
		} else {
			args = append(args, wordNoCreate)
		}
		args = append(args, wordItems)
	}
	head, n := len(args), 0
	if len(items) > 1 {
		// One Scalable.AddMany first: its batches request their blocks
		// ahead, so the items' cache misses overlap (BF.MADD of 10 at
		// -P 1 spent a sixth of the server's CPU waiting on them one by
		// one). It stops at a refused item, which the loop below meets
		// again and answers as RedisBloom does.
		var buf [16]bool
		isNew, sc := buf[:], (*addRunScratch)(nil)
		if len(items) > len(buf) {
			sc = runScratch.Get().(*addRunScratch)
			sc.isNew = resized(sc.isNew, len(items))
			isNew = sc.isNew
		}
		n, _ = e.filter.AddMany(items, isNew)
		setAddResults(res, isNew[:n])
		if args != nil {
			args = appendNew(args, items[:n], isNew)
		}
		if sc != nil {
			runScratch.Put(sc)
		}
	}
	for _, item := range items[n:] {
		added, err := e.filter.Add(item)
		switch {
		case errors.Is(err, bloom.ErrCannotGrow): // as RedisBloom: this item fails, the next are tried
			res[n] = addFailed
		case err != nil:
			return n, m.logAdded(key, args, head, fm, itemError{filterError(err)})
		case added:
			res[n] = addNew
			if args != nil {
				args = append(args, item)
			}
		default:
			res[n] = addPresent
		}
		n++
	}
	return n, m.logAdded(key, args, head, fm, nil)
}

// AddRun adds the commands of a run (conn_run.go) under one lock of the
// key. When the filter exists, the items of all of them go through one
// Scalable.AddMany, whose batches request their blocks ahead so that the
// commands' cache misses overlap, and each command is answered and
// journaled as Add would have done it (a record of its own new items). A
// refused item (a full filter, a growth refused) ends that: the rest of
// its command, and each command after it, run through Add's own path, as
// they would alone; so does every command of a run on a missing key (the
// first creates it).
func (m *memstore) AddRun(_ context.Context, key string, ops []*batchOp) {
	defer m.ks.lockKey(key).Unlock()
	done := 0
	if e, err := m.bloomOf(key); err == nil && e != nil {
		done = m.addRunTo(key, e, ops)
	}
	for _, o := range ops[done:] {
		o.n, o.err = m.addLocked(key, o.items, o.create, o.res)
	}
}

// addRunTo adds the items of ops to e's filter in one AddMany and answers
// and journals the commands it completed; it returns how many. A command
// cut by a refused item is answered for the items before it, and goes on
// alone from there (addLocked).
func (m *memstore) addRunTo(key string, e *entry, ops []*batchOp) int {
	m.ks.modify(key, e)
	sc := runScratch.Get().(*addRunScratch)
	defer func() { clear(sc.items); sc.items = sc.items[:0]; runScratch.Put(sc) }()
	for _, o := range ops {
		sc.items = append(sc.items, o.items...)
	}
	sc.isNew = resized(sc.isNew, len(sc.items))
	stop, _ := e.filter.AddMany(sc.items, sc.isNew) // a refusal is met again, and answered, below
	from := 0
	for i, o := range ops {
		to := from + len(o.items)
		k := min(to, stop) - from // o's items added
		setAddResults(o.res, sc.isNew[from:from+k])
		m.journalAdded(key, o.items[:k], sc.isNew[from:from+k])
		if k == len(o.items) {
			o.n, o.err = k, nil
			from = to
			continue
		}
		n, err := m.addLocked(key, o.items[k:], o.create, o.res[k:])
		o.n, o.err = k+n, err
		return i + 1
	}
	return len(ops)
}

// addRunScratch is AddRun's: the run's items and their answers.
type addRunScratch struct {
	items [][]byte
	isNew []bool
}

var runScratch = sync.Pool{New: func() any { return new(addRunScratch) }}

// journalAdded journals an add of items to a filter that existed: the
// ones that were new (isNew), as Add's record (logAdded).
func (m *memstore) journalAdded(key string, items [][]byte, isNew []bool) {
	if m.journal == nil {
		return
	}
	pooled := journalArgs.Get().(*[][]byte)
	args := appendNew(append((*pooled)[:0], wordInsert, readOnlyBytes(key), wordNoCreate, wordItems), items, isNew)
	m.logAdded(key, args, 4, nil, nil)
	clear(args)
	*pooled = args[:0]
	journalArgs.Put(pooled)
}

// appendNew appends to args the items that were new (isNew[i]).
func appendNew(args, items [][]byte, isNew []bool) [][]byte {
	for i, item := range items {
		if isNew[i] {
			args = append(args, item)
		}
	}
	return args
}

// logAdded journals an add (see Add): args, the BF.INSERT of the items
// that were new after its first head words, or BF.RESERVE when it created
// the filter (with created, non-nil) and added nothing; it returns err.
// New items in a filter that existed (args is then BF.INSERT key NOCREATE
// ITEMS …) join the log's merged adds: one is BF.ADD key item, which the
// replayer reads as BF.INSERT key NOCREATE ITEMS item, and more extend
// the adds to the same filter next to them into one BF.INSERT record,
// the same in fewer bytes (docs/PERSISTENCE.md, "The log").
func (m *memstore) logAdded(key string, args [][]byte, head int, created *filterMaker, err error) error {
	switch {
	case created != nil && len(args) == head && m.journal != nil: // BF.INSERT needs an item: reserve instead
		m.log(append([][]byte{[]byte("BF.RESERVE"), []byte(key)}, created.reserve...)...)
	case created == nil && len(args) > head:
		m.logAdds(wordAdd, key, args[head:])
	case len(args) > head:
		m.log(args...)
	}
	return err
}

// journalArgs recycles the argument lists of journaled adds.
var journalArgs = sync.Pool{New: func() any { s := make([][]byte, 0, 16); return &s }}

// The words of the records journaled on every add (read only).
var (
	wordAdd      = []byte("BF.ADD")
	wordInsert   = []byte("BF.INSERT")
	wordNoCreate = []byte("NOCREATE")
	wordItems    = []byte("ITEMS")
)

// readOnlyBytes returns the bytes of s without copying them, for a record
// that only reads them (appendRecord copies them into the log's buffer):
// they must never be written to, nor kept.
func readOnlyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// filterError maps an error of bloom.Scalable.Add to its reply.
func filterError(err error) replyError {
	switch {
	case errors.Is(err, bloom.ErrFull):
		return errFull
	case errors.Is(err, bloom.ErrTooLarge), errors.Is(err, errNoMemory):
		return errNoMemory
	}
	return replyError("ERR " + err.Error())
}

func (m *memstore) Exists(_ context.Context, key string, items [][]byte, found []bool) error {
	defer m.ks.lockKey(key).Unlock()
	switch e := m.ks.get(key); {
	case e == nil || e.filter == nil: // missing, or another type: nothing is found
		clear(found)
	case len(items) == 1:
		found[0] = e.filter.Test(items[0])
	default:
		e.filter.TestMany(items, found) // a run's items, or BF.MEXISTS's, in batches
	}
	return nil
}

func (m *memstore) Info(_ context.Context, key string) (filterInfo, error) {
	defer m.ks.lockKey(key).Unlock()
	e, err := m.bloomOf(key)
	if e == nil {
		return filterInfo{}, cmp.Or(err, error(errNotFound))
	}
	return infoOf(e.filter.Info(), e.filter.Layout()), nil
}

func (m *memstore) Debug(_ context.Context, key string) (filterDebug, error) {
	defer m.ks.lockKey(key).Unlock()
	e, err := m.bloomOf(key)
	if e == nil {
		return filterDebug{}, cmp.Or(err, error(errNotFound))
	}
	d := filterDebug{Items: e.filter.Count()}
	for _, sub := range e.filter.SubFilterGeometry() {
		sd := subDebugOf(sub.Sizing, sub.Items)
		if e.filter.HashID() == bloom.HashMurmur2 {
			sd.HashWidth = 32 // RedisBloom's filters without FORCE64
		}
		d.Subs = append(d.Subs, sd)
	}
	return d, nil
}

func (m *memstore) Card(_ context.Context, key string) (uint64, error) {
	defer m.ks.lockKey(key).Unlock()
	e, err := m.bloomOf(key)
	if e == nil {
		return 0, err
	}
	return e.filter.Count(), nil
}
