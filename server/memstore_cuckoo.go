package server

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"sync"

	"github.com/bloomery/bloom/cuckoo"
)

// The memory backend's cuckoo filters: cuckoo.Filters in the keyspace
// (keyspace_entry.go), each touched only under its key's shard lock (a
// cuckoo.Filter needs exclusive access to change: docs/CUCKOO.md §5),
// charged to the memory budget before anything is allocated (creation,
// growth through the filter's grow hook, a dump header), and every
// change journaled in a canonical form that replays to the same bytes
// (the filter is deterministic):
//
//	CF.RESERVE key capacity BUCKETSIZE b MAXITERATIONS m EXPANSION e
//	CF.INSERT key CAPACITY c ITEMS item…   the items stored, in a new filter
//	CF.INSERT key NOCREATE ITEMS item…     the items stored, in an existing one
//	CF.DEL key item                        a copy deleted (and any compaction)
//	CF.COMPACT key
//	CF.LOADCHUNK key iter data
//
// Only the items an add stored are journaled, as plain inserts (an item
// CF.ADDNX stored, CF.INSERT stores the same way): an item that failed
// (no room, or a growth past the total budget, which does not hold while
// loading) changed nothing, and must change nothing on replay either.

// memCuckoo is the memory backend's cuckooStore: the memstore under the
// names of the CF.* operations (its own Reserve, Add, … are the BF.*
// ones).
type memCuckoo struct{ *memstore }

// cuckooOf returns key's entry and cuckoo filter, nils when the key is
// missing, errWrongType when it holds a Bloom filter. The caller holds
// key's lock.
func (m *memstore) cuckooOf(key string) (*entry, *cuckoo.Filter, error) {
	e := m.ks.get(key)
	if e == nil {
		return nil, nil, nil
	}
	if f := e.cuckoo(); f != nil {
		return e, f, nil
	}
	return nil, nil, errWrongType
}

// cuckooBytes is the bytes of the filter cuckoo.New makes with o (checked
// options): one sub-filter of the least power of two ≥
// capacity/bucketSize buckets (docs/CUCKOO.md §2).
func cuckooBytes(o cuckooOpts) uint64 {
	nb := uint64(1)
	for nb < o.capacity/o.bucketSize {
		nb <<= 1
	}
	return nb * o.bucketSize
}

// createCuckoo makes a cuckoo filter with o, charging it to the budget
// before it is allocated.
func (m *memstore) createCuckoo(o cuckooOpts) (*cuckoo.Filter, error) {
	size := cuckooBytes(o)
	if size > m.maxFilter {
		return nil, errNoMemory
	}
	if err := m.reserve(size); err != nil {
		return nil, err
	}
	f, err := cuckoo.New(o.capacity, cuckoo.WithBucketSize(o.bucketSize), cuckoo.WithMaxIterations(o.maxIterations),
		cuckoo.WithExpansion(o.expansion), cuckoo.WithMaxBytes(m.maxFilter))
	if err != nil {
		m.used.Add(-size)
		return nil, errNoMemory
	}
	f.SetGrowHook(m.charge)
	return f, nil
}

func (c memCuckoo) Reserve(_ context.Context, key string, o cuckooOpts) error {
	defer c.ks.lockKey(key).Unlock()
	if e, _, err := c.cuckooOf(key); err != nil || e != nil {
		return cmp.Or(err, error(errItemExists))
	}
	f, err := c.createCuckoo(o)
	if err != nil {
		return err
	}
	c.ks.set(key, newCuckooEntry(f))
	c.log([]byte("CF.RESERVE"), []byte(key), fmtUint(o.capacity), []byte("BUCKETSIZE"), fmtUint(o.bucketSize),
		[]byte("MAXITERATIONS"), fmtUint(o.maxIterations), []byte("EXPANSION"), fmtUint(o.expansion))
	return nil
}

func (c memCuckoo) Add(_ context.Context, key string, items [][]byte, a cuckooAdd, res []cuckoo.Status) error {
	defer c.ks.lockKey(key).Unlock()
	return c.addLocked(key, items, a, res)
}

// addLocked is Add with key's lock held.
func (c memCuckoo) addLocked(key string, items [][]byte, a cuckooAdd, res []cuckoo.Status) error {
	e, f, err := c.cuckooOf(key)
	switch {
	case err != nil:
		return err
	case e == nil && a.create == nil:
		return errNotFound
	case e == nil:
		if f, err = c.createCuckoo(*a.create); err != nil {
			return err
		}
		c.ks.set(key, newCuckooEntry(f))
	case f.Filters() >= maxCuckooFilters:
		return errMaxExpansions
	default:
		c.ks.modify(key, e)
	}
	if a.nx {
		f.AddUniqueMany(items, res)
	} else {
		f.AddMany(items, res)
	}
	if c.journal != nil {
		c.logAdd(key, items, res, a.create, e == nil)
	}
	return nil
}

// CFAddRun adds the commands of a run of CF.ADDs and CF.ADDNXs (conn_run.go)
// under one lock of the key. When the filter exists, consecutive
// commands of one kind go through one AddMany (or AddUniqueMany), whose
// batches read their buckets ahead so that the commands' cache misses
// overlap, and each command is answered and journaled as Add would have
// done it. Add refuses a command when the filter has maxCuckooFilters
// sub-filters; an insert grows the filter at most once (the new
// sub-filter is empty, so it takes the item), so a chunk of n items
// started with n sub-filters or more to spare has every command in it
// see fewer than the limit, as alone. Past that, and on a missing key
// (the first command creates it), the commands go through Add's own path.
func (c memCuckoo) CFAddRun(_ context.Context, key string, ops []*batchOp) {
	defer c.ks.lockKey(key).Unlock()
	done := 0
	if e, f, err := c.cuckooOf(key); err == nil && e != nil {
		c.ks.modify(key, e)
		done = c.addRunTo(key, f, ops)
	}
	create := defaultCuckoo // CF.ADD's, as cmdCFAdd
	for _, o := range ops[done:] {
		o.err = c.addLocked(key, o.items, cuckooAdd{nx: o.nx, create: &create}, o.cf)
	}
}

// addRunTo adds the items of ops to f in chunks (CFAddRun), answering and
// journaling each command, and returns how many commands it completed.
func (c memCuckoo) addRunTo(key string, f *cuckoo.Filter, ops []*batchOp) int {
	sc := cfRunPool.Get().(*cfRunScratch)
	defer func() { clear(sc.items); sc.items = sc.items[:0]; cfRunPool.Put(sc) }()
	i := 0
	for i < len(ops) {
		room, nx := maxCuckooFilters-f.Filters(), ops[i].nx
		sc.items = sc.items[:0]
		j := i
		for ; j < len(ops) && ops[j].nx == nx && len(sc.items)+len(ops[j].items) <= room; j++ {
			sc.items = append(sc.items, ops[j].items...)
		}
		if j == i { // no room for the next command: Add refuses it
			break
		}
		if nx {
			sc.res = f.AddUniqueMany(sc.items, sc.res)
		} else {
			sc.res = f.AddMany(sc.items, sc.res)
		}
		from := 0
		for _, o := range ops[i:j] {
			from += copy(o.cf, sc.res[from:])
			o.err = nil
			if c.journal != nil {
				c.logAdd(key, o.items, o.cf, nil, false)
			}
		}
		i = j
	}
	return i
}

// cfRunScratch is addRunTo's: a chunk's items and outcomes.
type cfRunScratch struct {
	items [][]byte
	res   []cuckoo.Status
}

var cfRunPool = sync.Pool{New: func() any { return new(cfRunScratch) }}

// logAdd journals an add: the CF.INSERT of the items stored (res), or,
// when it created the filter and stored none, the filter's CF.RESERVE.
// One item stored in a filter that existed is CF.ADD key item, which the
// replayer reads as CF.INSERT key NOCREATE ITEMS item: the same in fewer
// bytes (docs/PERSISTENCE.md, "The log").
func (c memCuckoo) logAdd(key string, items [][]byte, res []cuckoo.Status, create *cuckooOpts, created bool) {
	if i, ok := onlyInserted(res); ok && !created { // without building the insert
		c.memstore.logAdd(wordCFAdd, key, items[i])
		return
	}
	pooled := journalArgs.Get().(*[][]byte)
	args := append((*pooled)[:0], wordCFInsert, readOnlyBytes(key))
	if created {
		args = append(args, wordCapacity, fmtUint(create.capacity))
	} else {
		args = append(args, wordNoCreate)
	}
	args = append(args, wordItems)
	head := len(args)
	for i, st := range res {
		if st == cuckoo.Inserted {
			args = append(args, items[i])
		}
	}
	switch {
	case len(args) > head:
		c.log(args...)
	case created:
		c.log([]byte("CF.RESERVE"), []byte(key), fmtUint(create.capacity), []byte("BUCKETSIZE"), fmtUint(create.bucketSize),
			[]byte("MAXITERATIONS"), fmtUint(create.maxIterations), []byte("EXPANSION"), fmtUint(create.expansion))
	}
	clear(args)
	*pooled = args[:0]
	journalArgs.Put(pooled)
}

// onlyInserted returns the index of the one item res stored, and whether
// exactly one was.
func onlyInserted(res []cuckoo.Status) (int, bool) {
	only := -1
	for i, st := range res {
		if st == cuckoo.Inserted {
			if only >= 0 {
				return 0, false
			}
			only = i
		}
	}
	return only, only >= 0
}

// The words of the records journaled on every cuckoo add (read only).
var (
	wordCFAdd    = []byte("CF.ADD")
	wordCFInsert = []byte("CF.INSERT")
	wordCapacity = []byte("CAPACITY")
)

func (c memCuckoo) Exists(_ context.Context, key string, items [][]byte, found []bool) error {
	defer c.ks.lockKey(key).Unlock()
	if _, f, _ := c.cuckooOf(key); f != nil {
		f.TestMany(items, found)
	} else {
		clear(found) // missing, or another type: nothing is found
	}
	return nil
}

func (c memCuckoo) Count(_ context.Context, key string, item []byte) (uint64, error) {
	defer c.ks.lockKey(key).Unlock()
	if _, f, _ := c.cuckooOf(key); f != nil {
		return f.Count(item), nil
	}
	return 0, nil
}

func (c memCuckoo) Delete(_ context.Context, key string, item []byte) (bool, error) {
	defer c.ks.lockKey(key).Unlock()
	e, f, _ := c.cuckooOf(key)
	if f == nil {
		return false, errCFNotFound
	}
	c.ks.modify(key, e)
	deleted := c.changeBytes(f, func() bool { return f.Delete(item) })
	if deleted {
		c.log([]byte("CF.DEL"), []byte(key), item)
	}
	return deleted, nil
}

// changeBytes runs change on f and credits the budget with the bytes of
// the sub-filters it freed (a compaction frees the newest ones it
// empties); it returns change's answer.
func (m *memstore) changeBytes(f *cuckoo.Filter, change func() bool) bool {
	before := f.Bytes()
	ok := change()
	m.used.Add(-(before - f.Bytes()))
	return ok
}

func (c memCuckoo) Info(_ context.Context, key string) (cuckooInfo, error) {
	defer c.ks.lockKey(key).Unlock()
	_, f, err := c.cuckooOf(key)
	if f == nil {
		return cuckooInfo{}, cmp.Or(err, error(errNotFound))
	}
	return f.Info(), nil
}

func (c memCuckoo) Compact(_ context.Context, key string) error {
	defer c.ks.lockKey(key).Unlock()
	e, f, _ := c.cuckooOf(key)
	if f == nil {
		return errCFNoFilter
	}
	c.ks.modify(key, e)
	c.changeBytes(f, func() bool { f.Compact(); return true })
	c.log([]byte("CF.COMPACT"), []byte(key))
	return nil
}

// ScanDump copies the chunk under the lock: the filter's own memory
// changes with the next write.
func (c memCuckoo) ScanDump(_ context.Context, key string, iter int64) (int64, []byte, error) {
	defer c.ks.lockKey(key).Unlock()
	_, f, err := c.cuckooOf(key)
	if f == nil {
		return 0, nil, cmp.Or(err, error(errNotFound))
	}
	next, chunk := f.ScanDump(iter)
	return next, bytes.Clone(chunk), nil
}

func (c memCuckoo) LoadChunk(_ context.Context, key string, iter int64, chunk []byte) error {
	defer c.ks.lockKey(key).Unlock()
	e, f, err := c.cuckooOf(key)
	switch {
	case err != nil:
		return err
	case iter == 1 && e != nil:
		return errItemExists
	case iter == 1:
		if f, err = c.loadCuckooHeader(chunk); err != nil {
			return err
		}
		c.ks.set(key, newCuckooEntry(f))
	case e == nil:
		return errNotFound
	default:
		c.ks.modify(key, e)
		if f.LoadChunk(iter, chunk) != nil {
			return errCFChunk
		}
	}
	c.log([]byte("CF.LOADCHUNK"), []byte(key), fmtInt(iter), chunk)
	return nil
}

// loadCuckooHeader makes the empty filter a dump header describes,
// validated (docs/CUCKOO.md §7) and charged to the budget before it is
// allocated. A header beyond the limits is errNoMemory (RedisBloom would
// try to allocate it).
func (m *memstore) loadCuckooHeader(hdr []byte) (*cuckoo.Filter, error) {
	if len(hdr) != cuckoo.DumpHeaderSize {
		return nil, errCFHeader
	}
	f, err := cuckoo.LoadDumpHeader(hdr, cuckoo.WithMaxBytes(m.filterRoom()))
	switch {
	case errors.Is(err, cuckoo.ErrTooLarge):
		return nil, errNoMemory
	case err != nil:
		return nil, errCFCreate
	}
	if err := m.reserve(f.Bytes()); err != nil {
		return nil, err
	}
	f.SetGrowHook(m.charge)
	return f, nil
}
