package server

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The log's pwrite(2), for what the mapping does not take
// (aof_map_linux.go), without the Go runtime's system call entry
// (syscall.RawSyscall). Entering a system call wakes the runtime's
// monitor thread (sysmon) when every processor was idle, and sysmon then
// polls every 20 µs for a millisecond or more: with clients that each
// wait for their reply (-P 1), every event loop turn's log write woke it,
// 13% of the server's CPU for BF.ADD against 0.5% for BF.EXISTS, which
// writes no log (issue 15). A write to the page cache takes microseconds
// and nothing else needs the processor meanwhile (as Redis writes its
// AOF from its event loop); but a write can block (dirty page throttling,
// a journal commit), and a raw call keeps its processor and delays a
// garbage collection's stop-the-world while it does: so a write that
// takes longer than rawWriteSlow sends the writes of the next
// rawWriteBackoff through the runtime, which hands the processor over.

// Thresholds of the log's raw writes.
const (
	rawWriteSlow    = time.Millisecond
	rawWriteBackoff = 10 * time.Second
)

// pwriteLog writes all of b to f at offset off, as f.WriteAt does, and
// returns how many bytes it wrote. The caller holds wmu.
func (f *logFile) pwriteLog(b []byte, off int64) (int, error) {
	if !f.rawUntil.IsZero() && time.Now().Before(f.rawUntil) {
		return f.File.WriteAt(b, off)
	}
	start := time.Now()
	fd, done := f.fd(), 0
	for done < len(b) {
		p := b[done:]
		n, _, e := syscall.RawSyscall6(unix.SYS_PWRITE64, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))),
			uintptr(len(p)), uintptr(off+int64(done)), 0, 0)
		switch {
		case e == unix.EINTR || e == unix.EAGAIN:
			continue
		case e != 0:
			return done, &os.PathError{Op: "write", Path: f.Name(), Err: e}
		case n == 0:
			return done, &os.PathError{Op: "write", Path: f.Name(), Err: unix.EIO}
		}
		done += int(n)
	}
	if took := time.Since(start); took > rawWriteSlow {
		f.rawUntil = start.Add(took + rawWriteBackoff)
	}
	return done, nil
}

// fd is f's descriptor, read once (os.File.Fd is not free).
func (f *logFile) fd() int {
	if f.sysfd < 0 {
		f.sysfd = int(f.File.Fd())
	}
	return f.sysfd
}
