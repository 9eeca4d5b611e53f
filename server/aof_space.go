package server

import (
	"errors"
	"fmt"
	"time"
)

// Room in the log for what is about to change (issue 11: a full disk).
//
// A write command is admitted before it runs: admit takes an upper bound
// of the bytes its records can take (recordBound) and succeeds only when
// the current log has that much room allocated on disk beyond what is
// written, buffered or promised to other admitted commands, allocating
// more (fallocate without changing the file's size, logAllocStep at a
// time) when it has not. So a full disk refuses a write command before
// it changes anything, with Redis's MISCONF error, instead of applying it
// in memory and then failing to log it; a record that was admitted has
// its blocks reserved and its write cannot fail for lack of space. When
// space returns, the next admission's allocation succeeds and writes
// resume; no restart is needed.
//
// Allocation is tried at most every noSpaceRetry while the disk is full.
// A filesystem that cannot preallocate (EOPNOTSUPP) admits everything: a
// full disk is then found by the write itself, whose commands get the
// MISCONF error instead of their reply (conn.refuseUnlogged), their
// records stay queued, and later write commands are refused until a
// retry of the write succeeds.

// logAllocStep is how much log space is allocated at once: few enough
// allocations to be free on the hot path, little enough to leave on a
// nearly full disk (a smaller allocation is tried when it fails).
const logAllocStep = 64 << 20

// noSpaceRetry is how often allocation is retried while the disk is full.
const noSpaceRetry = 100 * time.Millisecond

// errNoPrealloc is an aofFile's answer when it cannot preallocate.
var errNoPrealloc = errors.New("server: the filesystem cannot preallocate")

// logErrorReply is the reply to a write command that cannot be logged,
// as Redis words it.
func logErrorReply(err error) replyError {
	var re replyError
	if errors.As(err, &re) {
		return re
	}
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
		err = u // the OS's reason ("no space left on device"), not our context
	}
	return replyError("MISCONF Errors writing to the AOF file: " + err.Error())
}

// recordBound is an upper bound of the log bytes a write command with
// these arguments appends: its canonical record (at most its own words
// and a few more: BF.INSERT's creation options, PEXPIREAT's absolute
// time) and DELs of the keys it finds expired, each argument framed in
// at most 32 bytes, all twice over, plus a margin.
func recordBound(args [][]byte) int64 {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return recordBoundOf(n, len(args))
}

// recordBoundOf is recordBound of args counting n arguments of size
// bytes in all.
func recordBoundOf(size, n int) int64 { return 2*int64(size+32*n) + 512 }

// admit reserves room in the log for a write command's records (see
// above), or returns the MISCONF error that refuses the command. A
// successful admit must be followed by release(n) once the command has
// run.
func (p *persistence) admit(n int64) error {
	p.mu.Lock()
	ok := p.werr == nil && !p.closed && (p.noPrealloc || p.logSize+p.promised.Load()+n <= p.allocEnd)
	if ok {
		p.promised.Add(n)
	}
	p.mu.Unlock()
	if ok {
		return nil
	}
	return p.admitSlow(n)
}

// release returns what admit promised.
func (p *persistence) release(n int64) { p.promised.Add(-n) }

// admitSlow is admit when the log has no room or writing has failed:
// under wmu (so the file stays the same), it retries a failed write, then
// allocates what is needed, at most every noSpaceRetry while that fails.
func (p *persistence) admitSlow(n int64) error {
	retry := !p.writeOK.Load() // the retry may fsync: syncMu first (aof_sync.go)
	if retry {
		p.syncMu.Lock()
		defer p.syncMu.Unlock()
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.file == nil {
		return logErrorReply(errPersistClosed)
	}
	now := time.Now()
	if p.werr != nil {
		if !retry || now.Sub(p.lastRetry) < noSpaceRetry {
			return logErrorReply(p.werr)
		}
		p.lastRetry = now
		if err := p.flushLocked(p.policy != fsyncNo); err != nil {
			return logErrorReply(err)
		}
	}
	p.mu.Lock()
	need := p.logSize + p.promised.Load() + n
	have, closed := p.allocEnd, p.closed
	p.mu.Unlock()
	if closed {
		return logErrorReply(errPersistClosed)
	}
	if !p.noPrealloc && need > have {
		if p.spaceErr != nil && now.Sub(p.lastRetry) < noSpaceRetry {
			return logErrorReply(p.spaceErr)
		}
		p.lastRetry = now
		if err := p.allocateLocked(need); err != nil {
			return logErrorReply(err)
		}
	}
	p.mu.Lock()
	p.promised.Add(n)
	p.mu.Unlock()
	return nil
}

// allocateLocked makes the current log's allocation reach at least need
// bytes: logAllocStep more when the disk has room, else just need. The
// caller holds wmu.
func (p *persistence) allocateLocked(need int64) error {
	p.mu.Lock()
	have := p.allocEnd
	p.mu.Unlock()
	if need <= have {
		return nil
	}
	end := roundUp(need, 4096)
	step := max(end, have+logAllocStep)
	err := p.file.Allocate(have, step-have)
	if err == nil {
		end = step
	} else if !errors.Is(err, errNoPrealloc) {
		err = p.file.Allocate(have, end-have) // a nearly full disk: just what is needed
	}
	switch {
	case errors.Is(err, errNoPrealloc):
		p.mu.Lock()
		p.noPrealloc = true
		p.mu.Unlock()
		p.log.Info("the filesystem cannot preallocate the log; a full disk will fail writes after they are applied",
			"file", p.fileName)
		return nil
	case err != nil:
		if p.spaceErr == nil {
			p.log.Error("no room for the append-only log; write commands are refused until there is", "file", p.fileName, "err", err)
		}
		p.spaceErr = fmt.Errorf("allocate %s: %w", p.fileName, err)
		p.spaceRefusals.Add(1)
		return p.spaceErr
	}
	if p.spaceErr != nil {
		p.log.Info("room for the append-only log again; write commands are accepted", "file", p.fileName)
		p.spaceErr = nil
	}
	p.mu.Lock()
	p.allocEnd = max(p.allocEnd, end)
	p.mu.Unlock()
	return nil
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }
