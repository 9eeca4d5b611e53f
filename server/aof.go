package server

import (
	"errors"
	"fmt"
	"github.com/bloomery/bloom/internal/atomicfile"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The append-only log: records are appended to a buffer under mu (cheap:
// append runs under key locks), and written to the file under wmu by
// whoever needs them durable: a connection about to reply (waitDurable),
// the once-a-second flusher, or a snapshot rotating the log. Fsyncs are
// made under syncMu; with everysec the flusher's run without wmu
// (aof_sync.go). Positions count every byte ever appended, across logs: appended
// (the buffer's end), written (handed to the OS) and synced (fsynced).
// A waiter needs written (or synced, with always) ≥ the appended position
// it saw; whoever writes takes everything buffered so far, so the waiters
// that slept meanwhile usually find their records already durable: group
// commit without a dedicated goroutine (see waitDurable).

// castagnoli is the CRC-32C table of log records and snapshots.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errPersistClosed answers appends and waits after close.
var errPersistClosed = errors.New("server: persistence is closed")

// fsyncPolicy is when the log is fsynced (Config.AppendFsync).
type fsyncPolicy uint8

const (
	fsyncEverySec fsyncPolicy = iota // written before a reply, fsynced once a second
	fsyncAlways                      // written and fsynced before a reply
	fsyncNo                          // written before a reply, fsynced by the OS
)

func parsePolicy(s string) (fsyncPolicy, error) {
	switch s {
	case "always":
		return fsyncAlways, nil
	case "everysec", "":
		return fsyncEverySec, nil
	case "no":
		return fsyncNo, nil
	}
	return 0, fmt.Errorf("server: appendfsync %q: want always, everysec or no", s)
}

func (f fsyncPolicy) String() string { return [...]string{"everysec", "always", "no"}[f] }

// aofFile is what the log is written to: an *os.File opened for
// appending, as a logFile (tests substitute one that fails on demand).
type aofFile interface {
	Write(b []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	// Allocate reserves n bytes of disk from offset off without changing
	// the file's size (errNoPrealloc where it cannot).
	Allocate(off, n int64) error
	Close() error
}

// logFile is the aofFile of a real file; its writes go through writeLog
// (on Linux, stores into a shared mapping of the file: aof_map_linux.go).
// It belongs to the holder of wmu.
type logFile struct {
	*os.File
	sysfd    int       // the descriptor, -1 until fd reads it
	rawUntil time.Time // writes go through the runtime until then (a raw write was slow)
	logMap             // the mapped appends' state (empty where there are none)
}

func (f *logFile) Write(b []byte) (int, error) { return f.writeLog(b) }

// maxSpare bounds the buffer kept for reuse after a write.
const maxSpare = 4 << 20

// appendRecord appends the log record of a command to b: a RESP array of
// bulk strings, then "+" and the 8 lower-case hex digits of the CRC-32C
// of the array's bytes, then CRLF.
func appendRecord(b []byte, args [][]byte) []byte {
	start := len(b)
	b = appendHeader(b, '*', len(args))
	for _, a := range args {
		b = appendHeader(b, '$', len(a))
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return appendChecksum(b, crc32.Checksum(b[start:], castagnoli))
}

// appendHeader appends a RESP header line: c, n in decimal, CRLF. Most
// are short (a record's words and keys), so one or two digits are
// written directly.
func appendHeader(b []byte, c byte, n int) []byte {
	switch {
	case n < 10:
		return append(b, c, byte('0'+n), '\r', '\n')
	case n < 100:
		return append(b, c, byte('0'+n/10), byte('0'+n%10), '\r', '\n')
	}
	b = strconv.AppendUint(append(b, c), uint64(n), 10)
	return append(b, '\r', '\n')
}

// checksumLen is the length of a record's checksum line.
const checksumLen = 1 + 8 + 2

const hexDigits = "0123456789abcdef"

func appendChecksum(b []byte, sum uint32) []byte {
	b = append(b, '+')
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[sum>>shift&0xf])
	}
	return append(b, '\r', '\n')
}

// append journals one change (the journal interface). It is called under
// the locks of the keys the change touches, so records of one key are in
// the order the changes took effect. After close the change is not
// recorded, and waitDurable fails for it.
func (p *persistence) append(args ...[]byte) {
	if !p.lockOpen() {
		return
	}
	p.closeOpen() // aof_merge.go
	n := int64(len(p.buf))
	p.buf = appendRecord(p.buf, args)
	p.appendedLocked(int64(len(p.buf)) - n)
}

// lockOpen locks mu and reports true, or, after close, counts a
// position never written (so that waiters fail), leaves mu unlocked and
// reports false.
func (p *persistence) lockOpen() bool {
	p.mu.Lock()
	if p.closed {
		p.appended.Add(1)
		p.mu.Unlock()
		return false
	}
	return true
}

// appendedLocked counts a change of n bytes appended and asks for an
// automatic snapshot when one is due; the caller holds mu, which it
// unlocks.
func (p *persistence) appendedLocked(n int64) {
	p.appended.Add(n)
	p.logSize += n
	p.dirty++
	rewrite := !p.rewriteQueued && p.rewriteDue()
	if rewrite {
		p.rewriteQueued = true
	}
	p.mu.Unlock()
	if rewrite {
		select {
		case p.rewriteCh <- struct{}{}:
		default:
		}
	}
}

// rewriteDue reports whether an automatic snapshot is due, by Redis's
// auto-aof-rewrite rule: the data on disk (the snapshot and the log
// after it) is larger than rewriteMin and has grown by rewritePct percent
// since the last snapshot. Counting the snapshot keeps the snapshots'
// cost in proportion to the writes: with only the log counted, a
// keyspace much larger than rewriteMin was written whole every
// rewriteMin bytes of log (31% of the CPU of BF.ADD on new keys at 1.6
// million keys, issue 15). The snapshot counts by its weight, the bytes
// it would take without shapes (snapshot_shapes.go). The caller holds mu.
func (p *persistence) rewriteDue() bool {
	base, total := p.snapWeight+p.baseSize, p.snapWeight+p.logSize
	return total > p.rewriteMin && (total-base)*100 > base*p.rewritePct
}

// waitDurable returns when every record appended so far is written to
// the OS (everysec, no) or fsynced (always), or with the error that
// prevented it. While a write or fsync has failed, every wait retries
// both and fails until they succeed.
//
// Group commit: one waiter at a time is the leader and writes (and
// fsyncs) everything buffered; the others sleep on a condition variable
// and all wake when it is done, to find their records durable or to
// elect the next leader, who takes everything appended meanwhile.
func (p *persistence) waitDurable() error {
	target := p.appended.Load()
	done := &p.written
	if p.policy == fsyncAlways {
		done = &p.synced
	}
	if p.writeOK.Load() && done.Load() >= target {
		return nil
	}
	p.gmu.Lock()
	defer p.gmu.Unlock()
	for p.flushing {
		p.gcond.Wait()
		if p.writeOK.Load() && done.Load() >= target {
			return nil // a leader's write covered us
		}
	}
	p.flushing = true
	p.gmu.Unlock()
	// Only a wait that may fsync takes syncMu (aof_sync.go): with
	// everysec the leader writes while the flusher's fsync runs.
	sync := p.policy == fsyncAlways || !p.writeOK.Load()
	if sync {
		p.syncMu.Lock()
	}
	p.wmu.Lock()
	var err error
	switch {
	case p.file == nil:
		err = errPersistClosed
	case p.werr != nil && !sync:
		err = p.werr // it failed since this wait began: the next one retries
	case p.werr != nil || done.Load() < target:
		err = p.flushLocked(sync)
	}
	lag := err == nil && p.lagging()
	p.wmu.Unlock()
	if sync {
		p.syncMu.Unlock()
	}
	if lag {
		err = p.syncBehind()
	}
	p.gmu.Lock()
	p.flushing = false
	p.gcond.Broadcast()
	return err
}

// flushLocked writes the buffer (writeLocked) and records the outcome.
// The caller holds wmu.
func (p *persistence) flushLocked(sync bool) error {
	err := p.writeLocked(sync)
	p.noteFlush(err)
	return err
}

// noteFlush records the outcome of a write or fsync of the log: a
// failure fails the waits until one succeeds. The caller holds wmu.
func (p *persistence) noteFlush(err error) {
	switch {
	case err != nil:
		p.writeErrors.Add(1)
		if p.werr == nil {
			p.log.Error("append-only log write failed; write commands fail until a write succeeds", "file", p.fileName, "err", err)
		}
		p.werr = err
		p.writeOK.Store(false)
	case p.werr != nil:
		p.log.Info("append-only log writes succeed again", "file", p.fileName)
		p.werr = nil
		p.writeOK.Store(true)
	}
}

// writeLocked writes the buffered records to the current log and, with
// sync, fsyncs it. A failed write is truncated away and its bytes go back
// in front of the buffer; after a failed fsync the bytes since the last
// good one are truncated and queued again too (everysec and always keep
// them for this), since the OS may have dropped them. The caller holds
// wmu.
func (p *persistence) writeLocked(sync bool) error {
	if p.file == nil {
		return errPersistClosed
	}
	if sync && p.dirDirty {
		if err := atomicfile.SyncDir(p.dir); err != nil {
			return err
		}
		p.dirDirty = false
	}
	p.mu.Lock()
	p.closeOpen()
	data, end := p.buf, p.appended.Load()
	p.buf, p.spare = p.spare[:0], nil
	p.mu.Unlock()
	fresh := data // written now and not kept in p.unsynced
	if len(data) > 0 {
		n, err := p.file.Write(data)
		if err != nil {
			if terr := p.file.Truncate(p.fileWritten); terr != nil {
				// The partial write stays in the file: count it, and
				// keep it (whatever the policy) in case a failed fsync
				// truncates it after all.
				p.fileWritten += int64(n)
				p.written.Add(int64(n))
				p.unsynced = append(p.unsynced, data[:n]...)
				data = data[n:]
			}
			p.requeue(data)
			return fmt.Errorf("write %s: %w", p.fileName, err)
		}
		p.fileWritten += int64(n)
		p.written.Store(end)
		if !sync && p.keepUnsynced(data) && len(p.unsynced) >= kickUnsynced {
			// Bound the copy: past kickUnsynced, fsync now rather than
			// hold up to a second of heavy writes in memory; the
			// flusher does, without wmu (aof_sync.go).
			p.kickSync()
		}
	}
	if sync && p.fileSynced < p.fileWritten {
		if err := p.file.Sync(); err != nil {
			p.syncFailed(fresh)
			return fmt.Errorf("fsync %s: %w", p.fileName, err)
		}
		p.fsyncs.Add(1)
		p.fileSynced = p.fileWritten
		p.unsynced = p.unsynced[:0]
		if cap(p.unsynced) > 2*maxUnsynced {
			p.unsynced = nil // a burst's copy is not kept for ever
		}
	}
	if p.fileSynced == p.fileWritten {
		p.synced.Store(p.written.Load())
	}
	if cap(data) <= maxSpare {
		p.spare = data[:0]
	}
	return nil
}

// maxUnsynced bounds the bytes everysec keeps between fsyncs: writers
// that reach it wait for an fsync; at kickUnsynced the flusher is asked
// for one at once (aof_sync.go).
const (
	maxUnsynced  = 4 << 20
	kickUnsynced = maxUnsynced / 2
)

// keepUnsynced keeps bytes written without fsync (everysec), to write
// them again if the fsync fails, and reports whether it did.
func (p *persistence) keepUnsynced(b []byte) bool {
	if p.policy != fsyncEverySec {
		return false
	}
	p.unsynced = append(p.unsynced, b...)
	return true
}

// syncFailed undoes the writes since the last good fsync (p.unsynced,
// then data), so they are written again, unless the policy kept no copy
// (no) or the file cannot be truncated.
func (p *persistence) syncFailed(data []byte) {
	if p.policy == fsyncNo || p.file.Truncate(p.fileSynced) != nil {
		return
	}
	p.requeue(p.unsynced, data)
	p.unsynced = nil // requeue owns it
	p.fileWritten = p.fileSynced
	p.written.Store(p.synced.Load())
}

// requeue puts bytes taken from the buffer back in front of it. It owns
// first from then on: the records appended since are added to it, so a
// retried write copies only what is new, not the whole queue again.
func (p *persistence) requeue(first []byte, more ...[]byte) {
	for _, c := range more {
		first = append(first, c...)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(first, p.buf...)
}

// openLog opens log gen for appending (creating it if missing), fsyncs
// it, and makes it the current log. The caller holds wmu (or is alone).
func (p *persistence) openLog(gen uint64) error {
	name := filepath.Join(p.dir, logName(gen))
	f, err := os.OpenFile(name, logOpenFlags, 0o644)
	if err != nil {
		return fmt.Errorf("server: open log: %w", err)
	}
	st, err := f.Stat()
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("server: open log %s: %w", name, err)
	}
	p.closeLog()
	p.file, p.fileName = newLogFile(f, st.Size()), name
	p.fileWritten, p.fileSynced = st.Size(), st.Size()
	p.unsynced = p.unsynced[:0]
	p.mu.Lock()
	p.gen, p.logSize, p.allocEnd = gen, st.Size(), st.Size()
	p.mu.Unlock()
	// Room for the commands admitted to the previous log and the next
	// ones; on a full disk, admissions will ask again.
	if err := p.allocateLocked(st.Size() + p.promised.Load() + 1); err != nil {
		p.log.Warn("no room to preallocate the new log", "file", name, "err", err)
	}
	return nil
}

// closeLog closes the current log, if any, giving back the disk it had
// allocated beyond what was written. The caller holds wmu.
func (p *persistence) closeLog() {
	if p.file == nil {
		return
	}
	if err := p.file.Truncate(p.fileWritten); err != nil {
		p.log.Warn("freeing the previous log's preallocated space failed", "file", p.fileName, "err", err)
	}
	if err := p.file.Close(); err != nil {
		p.log.Warn("closing the previous log failed", "file", p.fileName, "err", err)
	}
	p.file = nil
}
