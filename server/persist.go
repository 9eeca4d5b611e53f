package server

// Durability of the memory backend (issue 5).
//
// Files, in Config.Dir, named by generation G (1, 2, …):
//
//	snapshot.G.bdb    the keyspace before log G (snapshot.go has the format)
//	appendonly.G.aof  the changes after it, one record per change
//	LOCK              flocked while a server uses the directory
//
// A log record is the change as a RESP array of bulk strings in the
// canonical form memstore journals (BF.RESERVE, BF.INSERT, BF.LOADCHUNK,
// DEL, RENAME, PEXPIREAT with absolute ms, PERSIST, FLUSHALL), then a
// line "+" + 8 lower-case hex digits of the CRC-32C of the array + CRLF.
// So the log is readable with the same eyes as redis-cli's traffic.
//
// Startup (openPersistence): lock the directory, delete leftover *.tmp,
// load the newest snapshot S (none: an empty keyspace, S = 0), replay the
// logs S, S+1, … (from 1 without a snapshot; a gap is an error) through
// a loader (replay.go: the command table's own handlers, on a keyspace
// whose clock stands at 1970 so that nothing expires while the past is
// replayed, under the configured limits: docs/DESIGN.md §8), then
// append to the newest log. A
// record the newest log ends inside of is an append a crash interrupted:
// it is cut off with a warning. Anything else that is wrong (a checksum
// mismatch, a malformed record, a torn record in an older log, a command
// that does not apply, a bad snapshot) stops startup with an error that
// names the file, the offset and the repair; nothing is skipped
// silently.
//
// Writing (aof.go): append encodes the record into a buffer under a
// mutex; a connection calls waitDurable before sending the replies of
// write commands, which writes the buffer to the OS (everysec, no) or
// writes and fsyncs it (always). One waiter, the leader, writes
// everything buffered so far while the others sleep on a condition
// variable: one write and one fsync serve every connection that was
// waiting (group commit). Once a
// second a background flush writes what is buffered and, with everysec
// (and always), fsyncs it. Since every acknowledged change was written
// to the OS before its reply, a crash of the process (kill -9) loses no
// acknowledged change under any policy; a crash of the machine loses
// none with always, up to about a second with everysec. A failed write
// or fsync makes waitDurable fail (the connection closes without a reply)
// and is reported in INFO until a later attempt, which rewrites the
// bytes the failure may have lost, succeeds.
//
// Snapshots (snapshot.go) are taken by SAVE, BGSAVE, automatically when
// the data on disk (the snapshot and the log after it) is larger than
// AOFRewriteMinSize and has grown by AOFRewritePercent since the last
// snapshot (rewriteDue, Redis's auto-aof-rewrite rule), and at close. The
// cut rotates the log to G+1 with every key locked (a pause that lists
// the keys, nothing more); the snapshot of that instant is written as
// snapshot.(G+1).bdb.tmp, fsynced, renamed and the directory fsynced;
// then the snapshots and logs older than G+1 are deleted. A crash at any
// point leaves either the old snapshot with logs G and G+1, or the new
// one with log G+1: both load to the same state.
//
// Memory: while a snapshot is written, the 4 KiB pages of the filters
// that change before the writer reaches them are copied (copy-on-write;
// at most the bytes changed meanwhile, never a filter whole); the buffer
// holds the records not yet written, and with everysec the bytes written
// since the last fsync.

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/atomicfile"
)

// persistence is the durability of the memory backend's keyspace in a
// data directory: the server holds it (Server.persist), the memstore
// journals its changes to it, and it reads the keyspace to snapshot it.
type persistence struct {
	ks         *keyspace
	dir        string
	log        *slog.Logger
	policy     fsyncPolicy
	rewriteMin int64
	rewritePct int64
	lock       *os.File

	// mu guards the buffer and the counters below; append holds it
	// briefly, under key locks. It comes after wmu in lock order.
	mu            sync.Mutex
	buf           []byte  // records not yet written
	gen           uint64  // the current log's generation
	logSize       int64   // the current log's bytes, written or buffered
	baseSize      int64   // logSize right after the last snapshot or at startup
	snapSize      int64   // bytes of the snapshot the current logs follow (0: none)
	snapWeight    int64   // its weight for rewriteDue (snapshot_shapes.go)
	dirty         int64   // changes since the last snapshot
	closed        bool    // appends are refused
	rewriteQueued bool    // an automatic snapshot is asked for or running
	open          openAdd // merged adds not yet framed into buf (aof_merge.go)
	appended      atomic.Int64

	// syncMu serialises fsyncing and rotating the log (aof_sync.go); it
	// is taken after key locks and before wmu. syncKick asks the flusher
	// for an fsync before its second is up.
	syncMu     sync.Mutex
	syncKick   chan struct{}
	flushEvery time.Duration // the flusher's period (Config.logFlushEvery)

	// wmu serialises writing, fsyncing and rotating the log; it is taken
	// after key locks and syncMu, and before mu.
	wmu                     sync.Mutex
	file                    aofFile // nil after close
	fileName                string
	spare, unsynced         []byte
	fileWritten, fileSynced int64
	dirDirty                bool  // the current log's directory entry is not fsynced yet
	werr                    error // the last write or fsync error; nil after a success
	written, synced         atomic.Int64
	writeOK                 atomic.Bool
	fsyncs, writeErrors     atomic.Int64

	// Room in the log (aof_space.go): allocEnd (under mu) is the current
	// log's bytes allocated on disk; promised, the bounds of the admitted
	// write commands still running. spaceErr and lastRetry are under wmu.
	allocEnd      int64
	promised      atomic.Int64
	noPrealloc    bool // under wmu; admit reads it under mu too, so both are held to set it
	spaceErr      error
	lastRetry     time.Time
	spaceRefusals atomic.Int64

	// Group commit (waitDurable): gmu guards flushing, a leader is
	// writing; the others wait on gcond. gmu comes before wmu.
	gmu      sync.Mutex
	gcond    sync.Cond
	flushing bool

	// Snapshots.
	snapMu      sync.Mutex  // held while one is made
	saving      atomic.Bool // one is made or about to be
	cut         atomic.Pointer[snapCut]
	snapGen     atomic.Uint64 // generation of the newest snapshot on disk
	lastSaveAt  atomic.Int64  // Unix ms of the last success (startup at first)
	lastSaveOK  atomic.Bool
	saves       atomic.Int64
	lastPause   atomic.Int64 // µs the keys were locked for the last cut
	lastSaveDur atomic.Int64 // ms the last snapshot took
	lastSize    atomic.Int64 // bytes of the last snapshot

	rewriteCh chan struct{}
	stop      chan struct{}
	bg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// A loader takes in what a data directory holds, in order: the
// snapshot's keys, then the logs' records. It applies the limits the
// server runs with (docs/DESIGN.md §8); a filter beyond them is an
// errNoMemory that stops the loading.
type loader interface {
	// maxFilterBytes bounds a filter decoded from the snapshot, before
	// it is allocated.
	maxFilterBytes() uint64
	// restore puts a snapshot's key into the keyspace.
	restore(key string, v snapValue, expireAt int64) error
	// restoreState puts a snapshot's key written as its shape's state
	// into the keyspace, decoding it with sl.
	restoreState(key []byte, sl *bloom.StateLoader, state []byte, expireAt int64) error
	// apply replays one log record.
	apply(args [][]byte) error
}

// openPersistence locks cfg.Dir (creating it), loads its snapshot and
// replays its logs into ks through l, and returns the persistence that
// journals ks's changes from then on (start starts its background work).
// Nothing may change ks meanwhile.
func openPersistence(ks *keyspace, l loader, cfg Config, log *slog.Logger) (*persistence, error) {
	policy, err := parsePolicy(cfg.AppendFsync)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("server: create data directory: %w", err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	p := &persistence{ks: ks, dir: cfg.Dir, log: log, policy: policy, lock: lock,
		rewriteMin: cfg.AOFRewriteMinSize, rewritePct: int64(cfg.AOFRewritePercent),
		rewriteCh: make(chan struct{}, 1), syncKick: make(chan struct{}, 1), flushEvery: cmp.Or(cfg.logFlushEvery, time.Second), stop: make(chan struct{})}
	p.gcond.L = &p.gmu
	if p.rewritePct <= 0 {
		p.rewritePct = 100
	}
	if err := p.load(l); err != nil {
		if p.file != nil {
			p.file.Close()
		}
		unlockDir(lock)
		return nil, err
	}
	p.writeOK.Store(true)
	p.lastSaveOK.Store(true)
	p.lastSaveAt.Store(time.Now().UnixMilli())
	ks.modifying = p.modifying
	return p, nil
}

// start starts the background work (the flush once a second, the
// automatic snapshots), once the loaded keyspace is served.
func (p *persistence) start() {
	p.bg.Add(2)
	go p.flushEverySecond()
	go p.rewriter()
}

// load reads the directory through l and opens the log.
func (p *persistence) load(l loader) error {
	start := time.Now()
	g, err := listGenerations(p.dir)
	if err != nil {
		return err
	}
	snap, logs, err := g.plan(p.dir)
	if err != nil {
		return err
	}
	var keys, records int64
	if snap > 0 {
		got, err := p.loadSnapshot(snap, l)
		if err != nil {
			return err
		}
		keys, p.snapSize, p.snapWeight = got.keys, got.size, got.weight
	}
	for i, lg := range logs {
		n, err := p.replayLog(filepath.Join(p.dir, logName(lg)), i == len(logs)-1, l)
		records += n
		if err != nil {
			return err
		}
	}
	cur := max(snap, 1)
	if len(logs) > 0 {
		cur = logs[len(logs)-1]
	} else if snap > 0 {
		p.log.Warn("no log after the snapshot; starting a new one", "snapshot", snapshotName(snap))
	}
	if err := p.openLog(cur); err != nil {
		return err
	}
	if err := atomicfile.SyncDir(p.dir); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := removeBefore(p.dir, g, snap); err != nil {
		p.log.Warn("removing obsolete files failed", "dir", p.dir, "err", err)
	}
	p.snapGen.Store(snap)
	p.baseSize, p.dirty = p.logSize, records
	p.written.Store(0)
	p.synced.Store(0)
	p.log.Info("data loaded", "dir", p.dir, "snapshot", snap, "keys_in_snapshot", keys, "logs", len(logs),
		"records_replayed", records, "keys", p.ks.len(), "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// flushEverySecond writes the buffer once a second and, with everysec
// and always, fsyncs the log; with everysec also when the writes since
// the last fsync pass kickUnsynced (syncBehind, aof_sync.go). A failure
// is recorded for the waits, which fail until a later flush succeeds.
func (p *persistence) flushEverySecond() {
	defer p.bg.Done()
	t := time.NewTicker(p.flushEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		case <-p.syncKick:
		}
		p.syncBehind()
	}
}

// close shuts persistence down: it stops the background work, writes a
// final snapshot (after which appends are refused and waits fail), makes
// sure the log is flushed and fsynced whatever happened, closes it and
// unlocks the directory.
func (p *persistence) close() error {
	p.closeOnce.Do(func() {
		close(p.stop)
		p.bg.Wait()
		p.saving.Store(true) // SAVE and BGSAVE from late clients fail
		err := p.snapshot(true)
		if !p.isClosed() { // the snapshot failed before its cut
			unlock := p.ks.lockAll()
			p.mu.Lock()
			p.closed = true
			p.mu.Unlock()
			unlock()
		}
		p.syncMu.Lock()
		defer p.syncMu.Unlock()
		p.wmu.Lock()
		if ferr := p.flushLocked(true); err == nil {
			err = ferr
		}
		if terr := p.file.Truncate(p.fileWritten); terr != nil { // the preallocated space
			p.log.Warn("freeing the log's preallocated space failed", "file", p.fileName, "err", terr)
		}
		if cerr := p.file.Close(); err == nil {
			err = cerr
		}
		p.file = nil
		p.wmu.Unlock()
		if uerr := unlockDir(p.lock); err == nil {
			err = uerr
		}
		p.closeErr = err
	})
	return p.closeErr
}

// info is INFO's persistence section (numeric fields become metrics).
func (p *persistence) info() []infoField {
	p.mu.Lock()
	size, base, pending, dirty, gen := p.snapSize+p.logSize, p.snapSize+p.baseSize, int64(len(p.buf))+p.open.size, p.dirty, p.gen
	p.mu.Unlock()
	saving := b01(p.saving.Load() && !p.isClosed())
	i := strconv.FormatInt
	return []infoField{
		{"aof_enabled", "1"},
		{"aof_fsync", p.policy.String()},
		{"aof_current_size", i(size, 10)},
		{"aof_base_size", i(base, 10)},
		{"aof_pending_bytes", i(pending, 10)},
		{"aof_generation", strconv.FormatUint(gen, 10)},
		{"aof_rewrite_in_progress", saving},
		{"aof_last_write_ok", b01(p.writeOK.Load())},
		{"aof_last_write_status", okErr(p.writeOK.Load())},
		{"aof_write_errors", i(p.writeErrors.Load(), 10)},
		{"aof_fsyncs", i(p.fsyncs.Load(), 10)},
		{"aof_no_space_refusals", i(p.spaceRefusals.Load(), 10)},
		{"rdb_bgsave_in_progress", saving},
		{"rdb_changes_since_last_save", i(dirty, 10)},
		{"rdb_last_save_time", i(p.lastSaveAt.Load()/1000, 10)},
		{"rdb_last_bgsave_ok", b01(p.lastSaveOK.Load())},
		{"rdb_last_bgsave_status", okErr(p.lastSaveOK.Load())},
		{"rdb_saves", i(p.saves.Load(), 10)},
		{"rdb_last_save_duration_ms", i(p.lastSaveDur.Load(), 10)},
		{"rdb_last_cut_pause_us", i(p.lastPause.Load(), 10)},
		{"rdb_last_save_bytes", i(p.lastSize.Load(), 10)},
		{"snapshot_generation", strconv.FormatUint(p.snapGen.Load(), 10)},
	}
}

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func okErr(b bool) string {
	if b {
		return "ok"
	}
	return "err"
}
