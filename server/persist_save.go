package server

import "time"

// Snapshots: SAVE, BGSAVE, the automatic ones, and their bookkeeping
// (snapshot.go writes them).

// rewriter takes the automatic snapshots append asks for. It waits a
// second when a SAVE or BGSAVE is running (append asks again if the log
// is still too large after it), and 5 seconds after a failure.
func (p *persistence) rewriter() {
	defer p.bg.Done()
	for {
		select {
		case <-p.stop:
			return
		case <-p.rewriteCh:
		}
		wait := time.Duration(0)
		if p.saving.CompareAndSwap(false, true) {
			p.mu.Lock()
			size, base, snap, weight := p.logSize, p.baseSize, p.snapSize, p.snapWeight
			p.mu.Unlock()
			p.log.Info("log grown: automatic snapshot", "log_bytes", size, "base_bytes", base, "snapshot_bytes", snap,
				"snapshot_weight", weight)
			if err := p.snapshot(false); err != nil {
				wait = 5 * time.Second
			}
			p.saving.Store(false)
		} else {
			wait = time.Second
		}
		if wait > 0 {
			select {
			case <-p.stop:
				return
			case <-time.After(wait):
			}
		}
		p.mu.Lock()
		p.rewriteQueued = false
		p.mu.Unlock()
	}
}

// save makes a snapshot now (SAVE); errSaveRunning while one is made.
func (p *persistence) save() error {
	if !p.saving.CompareAndSwap(false, true) {
		return errSaveRunning
	}
	defer p.saving.Store(false)
	return p.snapshot(false)
}

// bgsave starts a snapshot in the background (BGSAVE).
func (p *persistence) bgsave() error {
	if !p.saving.CompareAndSwap(false, true) {
		return errSaveRunning
	}
	go func() {
		defer p.saving.Store(false)
		p.snapshot(false)
	}()
	return nil
}

// snapshot makes one, logging and recording the outcome.
func (p *persistence) snapshot(final bool) error {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	if p.isClosed() {
		return errPersistClosed
	}
	start := time.Now()
	c, pause, err := p.takeCut(final)
	var size, weight int64
	if err == nil {
		size, weight, err = p.writeSnapshot(c)
		p.endCut()
	}
	if err != nil {
		p.lastSaveOK.Store(false)
		p.log.Error("snapshot failed; the logs still hold every change", "dir", p.dir, "err", err)
		return err
	}
	p.mu.Lock()
	p.baseSize, p.snapSize, p.snapWeight = p.logSize, size, weight
	p.dirty -= c.dirty
	p.mu.Unlock()
	p.snapGen.Store(c.gen)
	p.lastSaveOK.Store(true)
	p.lastSaveAt.Store(time.Now().UnixMilli())
	p.saves.Add(1)
	p.lastPause.Store(pause.Microseconds())
	p.lastSaveDur.Store(time.Since(start).Milliseconds())
	p.lastSize.Store(size)
	if g, err := listGenerations(p.dir); err == nil {
		err = removeBefore(p.dir, g, c.gen)
	}
	if err != nil {
		p.log.Warn("removing obsolete files failed", "dir", p.dir, "err", err)
	}
	p.log.Info("snapshot written", "file", snapshotName(c.gen), "keys", c.keys, "bytes", size,
		"pause", pause, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// endCut ends the snapshot in progress: the hook stops, and the shards
// may compact again.
func (p *persistence) endCut() {
	p.cut.Store(nil)
	p.ks.thaw()
}

func (p *persistence) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// lastSave is LASTSAVE.
func (p *persistence) lastSave() time.Time { return time.UnixMilli(p.lastSaveAt.Load()) }
