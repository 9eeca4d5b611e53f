package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom"
)

// journal receives the changes of the memory backend, each as one
// command in canonical form (see memstore.replay), in the order they take
// effect; append is called under the locks of the keys it changes.
type journal interface {
	append(args ...[]byte)
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
	maxFilter uint64
	charge    func(extra uint64) error // every filter's grow hook: m.reserve
	maxMemory uint64
	used      atomic.Uint64        // bytes of all bit arrays
	journal   journal              // nil: not journaled (replay, or no persistence)
	lastGlob  atomic.Pointer[glob] // the last SCAN/KEYS pattern, compiled
	limitless bool                 // replaying: limits are not enforced

	persist persister // nil without persistence
}

// persister is the durability of the memory backend (persist.go).
type persister interface {
	journal
	save() error
	bgsave() error
	lastSave() time.Time
	waitDurable() error
	admit(n int64) error
	release(n int64)
	info() []infoField
	close() error
}

func newMemstore(maxFilter, maxMemory uint64) *memstore {
	if maxFilter == 0 {
		maxFilter = bloom.DefaultMaxBytes
	}
	m := &memstore{ks: newKeyspace(), maxFilter: maxFilter, maxMemory: maxMemory}
	m.charge = m.reserve
	m.ks.dropped = func(e *entry) { m.used.Add(-e.filter.Bytes()) }
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
		if !m.limitless && m.maxMemory != 0 && (n > m.maxMemory || used > m.maxMemory-n) {
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

// The per-filter limit holds in replay too: a log can declare filters of
// any size, and loading must stay bounded. A filter in the log above a
// lowered --maxmemory-per-filter makes startup fail with errNoMemory
// (replay reports it), never drops it silently.

// create makes a filter with o, charging its first sub-filter to the
// budget before allocating it.
func (m *memstore) create(o createOpts) (*bloom.Scalable, error) {
	plan, err := bloom.NewScalablePlan(o.capacity, o.rate, bloom.WithGrowth(o.growth()))
	if err != nil {
		return nil, fmt.Errorf("server: plan filter: %w", err)
	}
	first, err := plan.Sub(0)
	if err != nil {
		return nil, fmt.Errorf("server: plan filter: %w", err)
	}
	if first.Bytes() > m.maxFilter {
		return nil, errNoMemory
	}
	if err := m.reserve(first.Bytes()); err != nil {
		return nil, err
	}
	f, err := bloom.NewScalable(o.capacity, o.rate, bloom.WithGrowth(o.growth()), bloom.WithMaxBytes(m.maxFilter))
	if err != nil {
		m.used.Add(-first.Bytes())
		return nil, fmt.Errorf("server: create filter: %w", err)
	}
	return f, nil
}

func (m *memstore) log(args ...[]byte) {
	if m.journal != nil {
		m.journal.append(args...)
	}
}

func (m *memstore) Reserve(_ context.Context, key string, o createOpts) error {
	defer m.ks.lock(key)()
	if m.ks.get(key) != nil {
		return errItemExists
	}
	f, err := m.create(o)
	if err != nil {
		return err
	}
	m.ks.set(key, m.adopt(f))
	args := [][]byte{[]byte("BF.RESERVE"), []byte(key), fmtFloat(o.rate), fmtUint(o.capacity)}
	m.log(append(args, scalingArgs(o)...)...)
	return nil
}

// scalingArgs are o's EXPANSION or NONSCALING arguments.
func scalingArgs(o createOpts) [][]byte {
	if o.nonScaling {
		return [][]byte{[]byte("NONSCALING")}
	}
	return [][]byte{[]byte("EXPANSION"), fmtUint(o.expansion)}
}

func (m *memstore) Add(_ context.Context, key string, items [][]byte, create *createOpts, added []bool) (int, error) {
	defer m.ks.lock(key)()
	e := m.ks.get(key)
	created := false
	if e == nil {
		if create == nil {
			return 0, errNotFound
		}
		f, err := m.create(*create)
		if err != nil {
			return 0, creationError{err}
		}
		e, created = m.adopt(f), true
		m.ks.set(key, e)
	} else {
		m.ks.modify(key, e)
	}
	// The journal gets one BF.INSERT of the items that were new (the
	// others changed nothing), creating the filter as it was created.
	var args [][]byte
	if m.journal != nil {
		args = journalArgs.Get().([][]byte)[:0]
		defer func() { clear(args); journalArgs.Put(args[:0]) }()
		args = append(args, []byte("BF.INSERT"), []byte(key))
		if created {
			args = append(append(args, []byte("CAPACITY"), fmtUint(create.capacity),
				[]byte("ERROR"), fmtFloat(create.rate)), scalingArgs(*create)...)
		} else {
			args = append(args, []byte("NOCREATE"))
		}
		args = append(args, []byte("ITEMS"))
	}
	head := len(args)
	n, err := 0, error(nil)
	for _, item := range items {
		added[n], err = e.filter.Add(item)
		if err != nil {
			err = filterError(err)
			break
		}
		if added[n] && args != nil {
			args = append(args, item)
		}
		n++
	}
	switch {
	case created && len(args) == head: // BF.INSERT needs an item: reserve instead
		m.log(append([][]byte{[]byte("BF.RESERVE"), []byte(key), fmtFloat(create.rate), fmtUint(create.capacity)},
			scalingArgs(*create)...)...)
	case len(args) > head:
		m.log(args...)
	}
	return n, err
}

// journalArgs recycles the argument lists of journaled adds.
var journalArgs = sync.Pool{New: func() any { return make([][]byte, 0, 16) }}

// creationError is an error that kept Add from creating the filter: the
// whole reply of BF.MADD or BF.INSERT, not an element of its array (as
// the same error is when a filter cannot grow).
type creationError struct{ error }

func (e creationError) Unwrap() error { return e.error }

// filterError maps an error of bloom.Scalable.Add to its reply.
func filterError(err error) error {
	switch {
	case errors.Is(err, bloom.ErrFull):
		return errFull
	case errors.Is(err, bloom.ErrTooLarge), errors.Is(err, errNoMemory):
		return errNoMemory
	}
	return err
}

func (m *memstore) Exists(_ context.Context, key string, items [][]byte, found []bool) error {
	defer m.ks.lock(key)()
	e := m.ks.get(key)
	for i, item := range items {
		found[i] = e != nil && e.filter.Test(item)
	}
	return nil
}

func (m *memstore) Info(_ context.Context, key string) (bloom.ScalableInfo, error) {
	defer m.ks.lock(key)()
	e := m.ks.get(key)
	if e == nil {
		return bloom.ScalableInfo{}, errNotFound
	}
	return e.filter.Info(), nil
}

func (m *memstore) Card(_ context.Context, key string) (uint64, error) {
	defer m.ks.lock(key)()
	if e := m.ks.get(key); e != nil {
		return e.filter.Count(), nil
	}
	return 0, nil
}

func (m *memstore) CountExisting(_ context.Context, keys []string) (int, error) {
	n := 0
	for _, k := range keys {
		unlock := m.ks.lock(k)
		if m.ks.get(k) != nil {
			n++
		}
		unlock()
	}
	return n, nil
}

func (m *memstore) Delete(_ context.Context, keys []string) (int, error) {
	defer m.ks.lock(keys...)()
	var logged [][]byte
	for _, k := range keys {
		if m.ks.del(k) {
			logged = append(logged, []byte(k))
		}
	}
	if len(logged) > 0 {
		m.log(append([][]byte{[]byte("DEL")}, logged...)...)
	}
	return len(logged), nil
}

func (m *memstore) Type(_ context.Context, key string) (string, error) {
	defer m.ks.lock(key)()
	if m.ks.get(key) == nil {
		return "none", nil
	}
	return typeName, nil
}

// typeName is what TYPE answers for a filter, as RedisBloom.
const typeName = "MBbloom--"

func (m *memstore) Rename(_ context.Context, from, to string) error {
	defer m.ks.lock(from, to)()
	if !m.ks.rename(from, to) {
		return errNoSuchKey
	}
	m.log([]byte("RENAME"), []byte(from), []byte(to))
	return nil
}

func (m *memstore) PExpireAt(_ context.Context, key string, at int64, cond expireCond) (bool, error) {
	defer m.ks.lock(key)()
	e := m.ks.get(key)
	if e == nil || !cond.allows(e.expireAt, at) {
		return false, nil
	}
	if at <= m.ks.now().UnixMilli() {
		m.ks.del(key)
		m.log([]byte("DEL"), []byte(key))
		return true, nil
	}
	m.ks.setExpire(key, e, at)
	m.log([]byte("PEXPIREAT"), []byte(key), fmtInt(at))
	return true, nil
}

// allows reports whether cond lets an expiry of old (0: none) become at.
func (cond expireCond) allows(old, at int64) bool {
	switch cond {
	case expireNX:
		return old == 0
	case expireXX:
		return old != 0
	case expireGT:
		return old != 0 && at > old
	case expireLT:
		return old == 0 || at < old
	}
	return true
}

func (m *memstore) PTTL(ctx context.Context, key string) (int64, error) {
	at, err := m.ExpireTime(ctx, key)
	if at < 0 || err != nil {
		return at, err
	}
	return max(at-m.ks.now().UnixMilli(), 0), nil
}

func (m *memstore) ExpireTime(_ context.Context, key string) (int64, error) {
	defer m.ks.lock(key)()
	e := m.ks.get(key)
	switch {
	case e == nil:
		return -2, nil
	case e.expireAt == 0:
		return -1, nil
	}
	return e.expireAt, nil
}

func (m *memstore) Persist(_ context.Context, key string) (bool, error) {
	defer m.ks.lock(key)()
	e := m.ks.get(key)
	if e == nil || e.expireAt == 0 {
		return false, nil
	}
	m.ks.setExpire(key, e, 0)
	m.log([]byte("PERSIST"), []byte(key))
	return true, nil
}

func (m *memstore) Scan(_ context.Context, cursor uint64, pattern string, count int) (uint64, []string, error) {
	keep := func(string) bool { return true }
	if pattern != "" {
		g := m.lastGlob.Load()
		if g == nil || g.src != pattern {
			g = compileGlob(pattern)
			m.lastGlob.Store(g)
		}
		keep = g.match
	}
	next, keys := m.ks.scan(cursor, count, keep)
	return next, keys, nil
}

func (m *memstore) DBSize(context.Context) (int64, error) { return int64(m.ks.len()), nil }

func (m *memstore) Flush(context.Context) error {
	unlock := m.ks.lockAll()
	old := m.ks.detach()
	m.log([]byte("FLUSHALL"))
	unlock()
	m.ks.release(old) // the keys' memory is counted down with no lock held
	return nil
}

func (m *memstore) Save(context.Context) error {
	if m.persist == nil {
		return errNotSupported
	}
	return m.persist.save()
}

func (m *memstore) BGSave(context.Context) error {
	if m.persist == nil {
		return errNotSupported
	}
	return m.persist.bgsave()
}

func (m *memstore) LastSave() time.Time {
	if m.persist == nil {
		return time.Time{}
	}
	return m.persist.lastSave()
}

func (m *memstore) Stats() backendStats {
	st := backendStats{Keys: int64(m.ks.len()), Expires: m.ks.expires.Load(), FilterBytes: m.used.Load()}
	if m.persist != nil {
		st.Persistence = m.persist.info()
	}
	return st
}

func (m *memstore) Close() error {
	if m.persist == nil {
		return nil
	}
	return m.persist.close()
}

func fmtFloat(f float64) []byte { return strconv.AppendFloat(nil, f, 'g', -1, 64) }
func fmtUint(n uint64) []byte   { return strconv.AppendUint(nil, n, 10) }
func fmtInt(n int64) []byte     { return strconv.AppendInt(nil, n, 10) }

// restore puts a filter read from a snapshot into the keyspace, counting
// its bytes, without journaling it or checking limits (loading must not
// lose data that was accepted under other limits).
func (m *memstore) restore(key string, f *bloom.Scalable, expireAt int64) {
	defer m.ks.lock(key)()
	e := m.adopt(f)
	e.expireAt = expireAt
	m.used.Add(f.Bytes())
	m.ks.set(key, e)
}
