package server

import "fmt"

// Fsyncs behind the writers (docs/DESIGN.md §8, step 4; docs/PERSISTENCE.md,
// "Fsyncs behind the writers").
//
// With everysec a reply waits only for its records to reach the OS, and
// the fsync comes later: once a second, and as soon as the bytes written
// since the last fsync pass kickUnsynced. Such an fsync runs without wmu
// (syncBehind), so the event loops go on writing the records of the next
// turns while it waits for the disk, as Redis's main thread goes on while
// its background thread fsyncs. An fsync under wmu held every waiter of
// the group commit for its whole length: 1–12 ms on this project's
// virtual machines, five times a second under BF.MADD (issue 15).
//
// syncMu serialises the log's fsyncs and its rotations: whoever fsyncs
// holds it. An fsync without wmu so knows that its file stays the
// current log, and no other fsync consumes the error the kernel reports
// once. Lock order: key locks, syncMu, wmu, mu.
//
// The fsync covers the bytes written before it began (upto); the bytes
// written meanwhile stay in p.unsynced, the copy everysec keeps of what
// a failed fsync may have lost. A failed one truncates the log to the
// last good fsync and queues all of that copy again (syncFailed), under
// wmu, as a failed fsync under wmu did. When the writers run ahead of
// the fsyncs by maxUnsynced, the leader of the next group commit
// waits for the fsync and makes one itself (waitDurable): memory for the
// copy stays bounded, and writes slow to the disk's pace, as Redis
// delays its writes while a background fsync lags.

// kickSync asks the flusher for an fsync now (the bytes written since
// the last one passed kickUnsynced).
func (p *persistence) kickSync() {
	select {
	case p.syncKick <- struct{}{}:
	default:
	}
}

// lagging reports whether the writers are so far ahead of the fsyncs
// that the next must not wait for the flusher. The caller holds wmu.
func (p *persistence) lagging() bool {
	return p.policy == fsyncEverySec && len(p.unsynced) >= maxUnsynced
}

// syncBehind writes what is buffered and fsyncs the log, holding wmu
// only to write and to record the outcome (everysec). With the other
// policies, after a failure or with the log's directory entry not yet
// fsynced, it flushes under wmu as waitDurable's leader does: fsyncing
// with always and everysec, only writing with no.
func (p *persistence) syncBehind() error {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	p.wmu.Lock()
	if p.file == nil {
		p.wmu.Unlock()
		return errPersistClosed
	}
	if p.policy != fsyncEverySec || p.werr != nil || p.dirDirty {
		err := p.flushLocked(p.policy != fsyncNo)
		p.wmu.Unlock()
		return err
	}
	if err := p.flushLocked(false); err != nil {
		p.wmu.Unlock()
		return err
	}
	f, name, upto, logical := p.file, p.fileName, p.fileWritten, p.written.Load()
	behind := p.fileSynced < upto
	p.wmu.Unlock()
	if !behind {
		return nil
	}
	err := f.Sync()
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err != nil {
		p.syncFailed(nil) // all of it is in p.unsynced
		err = fmt.Errorf("fsync %s: %w", name, err)
		p.noteFlush(err)
		return err
	}
	p.syncedTo(upto, logical)
	return nil
}

// syncedTo records an fsync that covered the current log up to byte
// upto, logical position logical: the copy keeps only what was written
// after it. The caller holds wmu (and syncMu: no rotation came between).
func (p *persistence) syncedTo(upto, logical int64) {
	p.fsyncs.Add(1)
	if d := upto - p.fileSynced; d > 0 {
		d = min(d, int64(len(p.unsynced)))
		n := copy(p.unsynced, p.unsynced[d:])
		p.unsynced = p.unsynced[:n]
		p.fileSynced = upto
	}
	if len(p.unsynced) < kickUnsynced {
		select { // a kick the writes sent meanwhile: this fsync answered it
		case <-p.syncKick:
		default:
		}
	}
	if cap(p.unsynced) > 2*maxUnsynced {
		p.unsynced = append([]byte(nil), p.unsynced...) // a burst's copy is not kept for ever
	}
	if p.fileSynced == p.fileWritten {
		p.synced.Store(p.written.Load())
	} else if logical > p.synced.Load() {
		p.synced.Store(logical)
	}
}
