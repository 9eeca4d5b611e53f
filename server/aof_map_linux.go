package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// Appends through a shared mapping of the log (docs/PERSISTENCE.md, "How
// a record reaches the file"; docs/DESIGN.md §8, step 4).
//
// A record survives a crash of the process (kill -9) once it is in the
// page cache. write(2) puts it there, and so does a store into a
// MAP_SHARED mapping of the file, without a system call: with clients
// that each wait for their reply (-P 1), the write(2) of every event
// loop turn was about a sixth of BF.ADD's CPU (issue 15). So the log is
// appended to through a window of mapWindow bytes (aligned) that moves
// along the file as records are added; the window behind is unmapped,
// so the log counts in the server's resident memory for one window at
// most.
//
// Stores go only where Allocate has reserved the disk blocks
// (fallocate), and the file's size is raised (ftruncate) over them
// first, to the window's end or the reservation's: a store cannot fault
// for lack of disk, and nothing is stored past the end of the file.
// Anything else (a filesystem that cannot reserve, a record beyond the
// reservation, a failed mmap) is a pwrite(2) at the same offset.
//
// So the file's size runs ahead of its records by up to a window of
// zeros: closing the log truncates them away with the reservation, and
// after a crash, reading the log trims them (trimZeroTail). fsync writes
// back the pages stored through the mapping as it does written ones (the
// kernel marks a shared page dirty at the first store after a
// write-back). A fault while storing (the file truncated underneath, an
// I/O error) becomes the write's error (debug.SetPanicOnFault), and the
// log's write-error path takes over: the records stay queued and write
// commands are refused with MISCONF until a write succeeds.

// mapWindow is the size of the mapped part of the log: a power of two,
// a multiple of the page size.
const mapWindow = 2 << 20

// logOpenFlags open a log for reading and writing (a shared writable
// mapping needs both), without O_APPEND: writes go to explicit offsets.
const logOpenFlags = os.O_CREATE | os.O_RDWR

// errNoMap: the window could not be mapped; the write goes through
// pwrite.
var errNoMap = errors.New("server: the log cannot be mapped")

// logMap is a logFile's mapped-append state.
type logMap struct {
	pos      int64  // where the next append goes: the end of the records
	size     int64  // the file's size: zeros from pos to it
	reserved int64  // the end of the disk blocks Allocate reserved
	win      []byte // the mapped window, the file's bytes from winOff
	winOff   int64
	noMap    bool // mapping failed once: every append is a pwrite
}

// newLogFile makes the logFile of f, of size bytes, to append to.
func newLogFile(f *os.File, size int64) *logFile {
	return &logFile{File: f, sysfd: -1, logMap: logMap{pos: size, size: size}}
}

// writeLog appends b at the end of the records: through the mapping
// where the blocks are reserved, else with pwrite. It returns how many
// bytes it appended. The caller holds wmu.
func (f *logFile) writeLog(b []byte) (int, error) {
	done := 0
	if !f.noMap && f.pos+int64(len(b)) <= f.reserved {
		n, err := f.store(b)
		f.pos += int64(n)
		if err != nil && !errors.Is(err, errNoMap) {
			return n, err
		}
		done = n
	}
	if done == len(b) {
		return done, nil
	}
	n, err := f.pwriteLog(b[done:], f.pos)
	f.pos += int64(n)
	f.size = max(f.size, f.pos)
	return done + n, err
}

// store copies b to the file from pos through the mapping, moving the
// window as it goes, and returns how many bytes it stored: all, unless
// an error says why not.
func (f *logFile) store(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		off := f.pos + int64(done)
		if off < f.winOff || off >= f.winOff+int64(len(f.win)) {
			if err := f.mapAt(off); err != nil {
				return done, err
			}
		}
		at := off - f.winOff
		n := min(int64(len(b)-done), int64(len(f.win))-at)
		if err := f.cover(off + n); err != nil {
			return done, err
		}
		if err := storeBytes(f.win[at:at+n], b[done:done+int(n)]); err != nil {
			return done, &os.PathError{Op: "store", Path: f.Name(), Err: err}
		}
		done += int(n)
	}
	return done, nil
}

// mapAt maps the window holding offset off in place of the current one.
// On failure the log stops mapping (errNoMap).
func (f *logFile) mapAt(off int64) error {
	f.unmap()
	start := off &^ (mapWindow - 1)
	win, err := unix.Mmap(f.fd(), start, mapWindow, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.noMap = true
		return fmt.Errorf("%w: mmap %s at %d: %v", errNoMap, f.Name(), start, err)
	}
	f.win, f.winOff = win, start
	return nil
}

// unmap drops the current window, if any.
func (f *logFile) unmap() {
	if f.win != nil {
		unix.Munmap(f.win) // the only failure is an invalid range, which a window from Mmap is not
		f.win = nil
	}
}

// cover raises the file's size to include offset end (not beyond the
// reservation, which end must be within): to the window's end, so that
// it is raised once a window.
func (f *logFile) cover(end int64) error {
	if end <= f.size {
		return nil
	}
	size := min(f.winOff+int64(len(f.win)), f.reserved)
	if err := unix.Ftruncate(f.fd(), size); err != nil {
		return &os.PathError{Op: "truncate", Path: f.Name(), Err: err}
	}
	f.size = size
	return nil
}

// storeBytes copies src to dst, a part of the mapping, and returns the
// fault that interrupted it, if one did.
func storeBytes(dst, src []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a fault in the mapped log: %v", r)
		}
	}()
	storeForward(dst, src)
	return nil
}

// storeForward copies src to dst from its first byte to its last, eight
// at a time, so that a process killed in the middle leaves a prefix of
// src in the file: what reading the log takes for a torn append and cuts
// off. copy (memmove) may store the end of a block before its start, and
// a kill -9 between the two left zeros followed by a record's end, which
// reads as corruption (TestCrashKill9 met it).
func storeForward(dst, src []byte) {
	dst = dst[:len(src)]
	i := 0
	for ; i+8 <= len(src); i += 8 {
		binary.NativeEndian.PutUint64(dst[i:], binary.NativeEndian.Uint64(src[i:]))
	}
	for ; i < len(src); i++ {
		dst[i] = src[i]
	}
}

// Allocate reserves n bytes of disk from offset off without changing the
// file's size; stores may go there.
func (f *logFile) Allocate(off, n int64) error {
	if err := allocate(f.File, off, n); err != nil {
		return err
	}
	f.reserved = max(f.reserved, off+n)
	return nil
}

// Truncate cuts the file (records, the zeros after them and the blocks
// reserved past the end) to size bytes, the new end of the records.
func (f *logFile) Truncate(size int64) error {
	if err := unix.Ftruncate(f.fd(), size); err != nil {
		return &os.PathError{Op: "truncate", Path: f.Name(), Err: err}
	}
	f.pos, f.size, f.reserved = size, size, min(f.reserved, size)
	return nil
}

// Close unmaps the window and closes the file.
func (f *logFile) Close() error {
	f.unmap()
	return f.File.Close()
}
