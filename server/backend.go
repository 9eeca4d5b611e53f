package server

import (
	"context"
	"errors"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/cuckoo"
)

// createOpts are the parameters of a new filter (BF.RESERVE, or BF.ADD,
// BF.MADD and BF.INSERT on a missing key).
type createOpts struct {
	rate       float64
	capacity   uint64
	expansion  uint64 // as given, also with nonScaling; 0 implies nonScaling
	nonScaling bool
}

// RedisBloom's defaults for filters made on demand.
var defaultCreate = createOpts{rate: 0.01, capacity: 100, expansion: 2}

// growth is the growth rule of a filter made with o: always RedisBloom's
// split, so BF.INFO's counters are RedisBloom's.
func (o createOpts) growth() bloom.Growth {
	return bloom.Growth{Expansion: o.expansion, NonScaling: o.nonScaling, RedisBloom: true}
}

// firstRate is the error rate of the first sub-filter of a filter made
// with o, by RedisBloom's split: half the rate, the whole of it when
// non-scaling.
func (o createOpts) firstRate() float64 {
	if o.nonScaling {
		return o.rate
	}
	return o.rate * 0.5
}

// creatable refuses, as RedisBloom does, a filter it cannot make: a
// scaling one whose first sub-filter's rate, half the filter's, is 0
// (the rate is the smallest double).
func (o createOpts) creatable() error {
	if o.firstRate() == 0 {
		return errCannotCreate
	}
	return nil
}

// A replyError is an error whose text is the reply a client gets, exactly
// (RedisBloom's and Redis's strings; some have no "ERR" prefix).
type replyError string

func (e replyError) Error() string { return string(e) }

// Errors the backends return; their text is the wire reply.
const (
	errNotFound      replyError = "ERR not found"
	errItemExists    replyError = "ERR item exists"
	errWrongType     replyError = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errFull          replyError = "ERR non scaling filter is full"
	errNoMemory      replyError = "ERR Insufficient memory to create filter"
	errNoSuchKey     replyError = "ERR no such key"
	errInvalidIter   replyError = "ERR invalid iterator"
	errBadChunk      replyError = "ERR received bad data"
	errNoLink        replyError = "ERR invalid offset - no link found"
	errChunkTooBig   replyError = "ERR invalid chunk - Too big for current filter"
	errCannotCreate  replyError = "ERR could not create filter"
	errSaveRunning   replyError = "ERR Background save already in progress"
	errNotSupported  replyError = "ERR not supported by this backend"
	errNoPersistence replyError = "ERR persistence is off: start bloomery serve with a data directory (--dir)"
)

// wireError is the reply for err: its own text for a replyError, else
// "ERR " and the text (a backend failure such as a lost Redis connection).
func wireError(err error) string {
	var re replyError
	if errors.As(err, &re) {
		return string(re)
	}
	return "ERR " + err.Error()
}

// expireCond is the NX/XX/GT/LT condition of EXPIRE and its family.
type expireCond uint8

const (
	expireAlways expireCond = iota
	expireNX                // only when the key has no expiry
	expireXX                // only when it has one
	expireGT                // only when the new time is later
	expireLT                // only when the new time is earlier (no expiry counts as infinite)
)

// The storage seam. A backend keeps the keys; each concern of a command
// is one interface, and a backend implements each concern it supports:
//
//   - keyStore: the keyspace, whatever the values are (existence,
//     deletion, types, renames, expiry, scans, flushes);
//   - bloomStore: the operations of one value type, Bloom filters (a
//     second value type is a second interface of the same kind, and a
//     field of Server beside Server.bloom);
//   - backend: what the server needs of the whole (figures, closing).
//
// Durability (the fsync promise, SAVE, BGSAVE, LASTSAVE) is not a
// backend's business: the server holds it (Server.persist, persist.go),
// and the memory backend only journals its changes to it.
//
// Every method is safe for concurrent use, and each is atomic with
// respect to the others on the same keys. Errors are replyErrors (the
// reply's exact text) or failures of the backend itself (a lost Redis
// connection: "ERR " and the text); an error that belongs to one item of
// a batch is an itemError.

// keyStore is the keyspace.
type keyStore interface {
	CountExisting(ctx context.Context, keys []string) (int, error)
	Delete(ctx context.Context, keys []string) (int, error)
	Type(ctx context.Context, key string) (string, error) // "none" when missing
	Rename(ctx context.Context, from, to string) error    // errNoSuchKey
	// PExpireAt sets key's expiry to at (Unix ms; at ≤ now deletes the
	// key) if cond allows, and reports whether it did.
	PExpireAt(ctx context.Context, key string, at int64, cond expireCond) (bool, error)
	// PTTL is Redis's PTTL: -2 missing, -1 no expiry, else milliseconds.
	PTTL(ctx context.Context, key string) (int64, error)
	// ExpireTime is the expiry in Unix ms, -1 none, -2 missing.
	ExpireTime(ctx context.Context, key string) (int64, error)
	Persist(ctx context.Context, key string) (bool, error)
	// Scan returns keys matching pattern ("" = all) from cursor on, about
	// count of them, and the next cursor (0 at the end).
	Scan(ctx context.Context, cursor uint64, pattern string, count int) (uint64, []string, error)
	DBSize(ctx context.Context) (int64, error)
	Flush(ctx context.Context) error
}

// bloomStore is the Bloom filters' operations (the BF.* commands).
type bloomStore interface {
	// Reserve creates key with o; errItemExists if it exists.
	Reserve(ctx context.Context, key string, o createOpts) error
	// Add inserts items into key's filter, first creating it with *create
	// when missing (create nil: errNotFound). It sets res[i] for each
	// item it processed and returns their number. An error that stopped
	// it at item n (a full filter, no memory to grow) is an itemError;
	// any other error (the filter could not be created, the key holds
	// another type) is the whole reply.
	Add(ctx context.Context, key string, items [][]byte, create *createOpts, res []addResult) (n int, err error)
	// Exists sets found[i] for each item; a missing key (or one of another
	// type) finds nothing.
	Exists(ctx context.Context, key string, items [][]byte, found []bool) error
	// Info describes key's filter (errNotFound when missing).
	Info(ctx context.Context, key string) (filterInfo, error)
	// Debug describes key's filter sub-filter by sub-filter (BF.DEBUG;
	// errNotFound when missing).
	Debug(ctx context.Context, key string) (filterDebug, error)
	// Card is the number of items inserted, 0 for a missing key.
	Card(ctx context.Context, key string) (uint64, error)
	// ScanDump returns the chunk of key's dump at iter and the next iter
	// (0 after the last chunk).
	ScanDump(ctx context.Context, key string, iter int64) (next int64, chunk []byte, err error)
	// LoadChunk restores one chunk of a dump made by ScanDump.
	LoadChunk(ctx context.Context, key string, iter int64, chunk []byte) error
}

// cuckooStore is the cuckoo filters' operations (the CF.* commands),
// with RedisBloom's semantics (docs/CUCKOO.md): a backend's filters
// answer every command as a cuckoo.Filter holding the same bytes does.
// Arguments come parsed and checked (ranges, iterators); the key's state
// is the store's to check. A key of another type is
// errWrongType unless a method says otherwise.
type cuckooStore interface {
	// Reserve creates key with o (errItemExists if it exists;
	// errNoMemory when a limit refuses it).
	Reserve(ctx context.Context, key string, o cuckooOpts) error
	// Add inserts items into key's filter, creating it with *a.create
	// when missing (a.create nil: errNotFound), storing only the items
	// that test absent when a.nx. A filter that has maxCuckooFilters
	// sub-filters or more refuses the whole call (errMaxExpansions),
	// checked once, before the first item. Otherwise every item is
	// tried, in order, each seeing the ones before, and res[i] is its
	// outcome: Inserted, Exists (nx only), NoSpace (expansion 0) or
	// GrowFailed (a growth beyond the limits); a failed item changes
	// nothing. len(res) == len(items).
	Add(ctx context.Context, key string, items [][]byte, a cuckooAdd, res []cuckoo.Status) error
	// Exists sets found[i] for each item; a missing key (or one of another
	// type) finds nothing.
	Exists(ctx context.Context, key string, items [][]byte, found []bool) error
	// Count is CF.COUNT: the item's fingerprint's copies in its buckets,
	// 0 for a missing key or one of another type.
	Count(ctx context.Context, key string, item []byte) (uint64, error)
	// Delete removes one copy of item and reports whether there was one;
	// it may compact the filter (docs/CUCKOO.md §4). A missing key or one
	// of another type: errCFNotFound.
	Delete(ctx context.Context, key string, item []byte) (bool, error)
	// Info describes key's filter (CF.INFO, CF.DEBUG; errNotFound when
	// missing).
	Info(ctx context.Context, key string) (cuckooInfo, error)
	// Compact is CF.COMPACT: it moves fingerprints into older sub-filters
	// and frees the newest ones it empties. A missing key or one of
	// another type: errCFNoFilter.
	Compact(ctx context.Context, key string) error
	// ScanDump returns the chunk of key's dump at iter (≥ 0) and the next
	// iter: (0, nil) after the last chunk and for a filter holding no
	// items (docs/CUCKOO.md §6). errNotFound when missing.
	ScanDump(ctx context.Context, key string, iter int64) (next int64, chunk []byte, err error)
	// LoadChunk restores one chunk of a dump made by ScanDump (iter ≠ 0):
	// at iter 1 the header, which makes the filter (errItemExists when the
	// key exists, errCFHeader for a length other than 38, errCFCreate for
	// fields RedisBloom refuses, errNoMemory past a limit); else a chunk
	// of the sub-filters' bytes (errNotFound when missing, errCFChunk when
	// it does not fit: docs/CUCKOO.md §7).
	LoadChunk(ctx context.Context, key string, iter int64, chunk []byte) error
}

// cuckooOpts are the parameters of a new cuckoo filter (CF.RESERVE; CF.ADD
// and CF.INSERT on a missing key), as given and checked: the store rounds
// the expansion up to a power of two, and the capacity down to a power of
// two of buckets, as RedisBloom does (docs/CUCKOO.md §2).
type cuckooOpts struct {
	capacity      uint64 // 2·bucketSize … maxCuckooCapacity
	bucketSize    uint64 // 1 … 255
	maxIterations uint64 // 1 … 65535
	expansion     uint64 // 0 … 32768; 0: never grow
}

// RedisBloom's defaults for cuckoo filters made on demand.
var defaultCuckoo = cuckooOpts{capacity: cuckoo.DefaultCapacity, bucketSize: cuckoo.DefaultBucketSize,
	maxIterations: cuckoo.DefaultMaxIterations, expansion: cuckoo.DefaultExpansion}

// RedisBloom 8's cuckoo limits: the largest capacity (cf-initial-size's
// maximum), and the sub-filters past which CF.ADD and CF.INSERT refuse
// (cf-max-expansions).
const (
	maxCuckooCapacity = 1 << 30
	maxCuckooFilters  = 32
)

// cuckooAdd says how Add treats its items and a missing key.
type cuckooAdd struct {
	nx     bool        // CF.ADDNX, CF.INSERTNX: store only items that test absent
	create *cuckooOpts // nil: a missing key is errNotFound (CF.INSERT NOCREATE)
}

// cuckooInfo is what CF.INFO and CF.DEBUG show of a cuckoo filter.
type cuckooInfo = cuckoo.Info

// Errors of the cuckoo filters (RedisBloom's texts; some without "ERR").
const (
	errCFNotFound    replyError = "Not found"                   // CF.DEL
	errCFNoFilter    replyError = "Cuckoo filter was not found" // CF.COMPACT
	errMaxExpansions replyError = "Maximum expansions reached"
	errCFFull        replyError = "Filter is full"          // CF.ADD, CF.ADDNX: NoSpace
	errCFGrow        replyError = "ERR Insufficient memory" // CF.ADD, CF.ADDNX: GrowFailed
	errCFHeader      replyError = "Invalid header"
	errCFCreate      replyError = "Couldn't create filter!"
	errCFChunk       replyError = "Couldn't load chunk!"
)

// filterInfo is what BF.INFO shows of a filter.
type filterInfo struct {
	bloom.ScalableInfo
	// Size is BF.INFO's Size: the bit arrays' bytes, and for a filter in
	// RedisBloom's layout RedisBloom's own figure (its structures too).
	Size uint64
}

// infoOf is the filterInfo of a filter in layout l summarised by in.
func infoOf(in bloom.ScalableInfo, l bloom.Layout) filterInfo {
	if l == bloom.RedisBloom {
		return filterInfo{in, in.RedisBloomSize()}
	}
	return filterInfo{in, in.Bytes}
}

// filterDebug is what BF.DEBUG shows of a filter: its items, and each
// sub-filter's geometry and items, the oldest first.
type filterDebug struct {
	Items uint64
	Subs  []subDebug
}

// subDebug is one sub-filter of a filterDebug.
type subDebug struct {
	Bytes, Bits uint64
	Hashes      uint32
	HashWidth   int // bits of the hash: 64, or 32 for RedisBloom's oldest filters
	Capacity    uint64
	Items       uint64
	Rate        float64 // the sub-filter's own error rate
}

// subDebugOf describes a sub-filter of geometry sz holding items items.
func subDebugOf(sz bloom.Sizing, items uint64) subDebug {
	return subDebug{Bytes: sz.Bytes(), Bits: sz.Bits, Hashes: sz.K, HashWidth: 64,
		Capacity: sz.N, Items: items, Rate: sz.P}
}

// backend is what the server needs of a backend as a whole.
type backend interface {
	// Stats are the figures INFO and the metrics report.
	Stats() backendStats
	// Close releases what the backend holds outside the process.
	Close() error
}

// An addResult is what an add did with one item, RedisBloom's reply
// element for it.
type addResult int8

const (
	addPresent addResult = iota // present already, or a false positive: 0
	addNew                      // added: 1
	// addFailed: the filter could not take it, and the next items are
	// still tried (a RedisBloom chain from a hand-made header that cannot
	// grow: bloom.ErrCannotGrow).
	addFailed
)

// setAddResults sets res[i] to addNew or addPresent as isNew[i] says,
// for each of isNew (res has at least as many elements).
func setAddResults(res []addResult, isNew []bool) {
	for i, b := range isNew {
		res[i] = addPresent
		if b {
			res[i] = addNew
		}
	}
}

// errCannotInsert is RedisBloom's element for an addFailed item.
const errCannotInsert replyError = "ERR problem inserting into filter"

// An itemError stops a batch (BF.MADD, BF.INSERT) at one item: the reply
// is the array of the items before it, then the error as its last
// element. Any other error of Add is the whole reply. The type, not the
// text, decides: the same text (errNoMemory) is an item's error when a
// filter cannot grow and the whole reply when it cannot be created, on
// every backend alike.
type itemError struct{ replyError }

func (e itemError) Unwrap() error { return e.replyError }

// backendStats are the figures INFO and the metrics report.
type backendStats struct {
	Keys        int64
	Expires     int64
	FilterBytes uint64      // bytes of all filters' bit arrays
	Fields      []infoField // the backend's own, in INFO's persistence section
}

// infoField is one "name:value" line of INFO.
type infoField struct{ name, value string }
