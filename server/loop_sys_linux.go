package server

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls of an event loop's turn, made without telling the Go
// runtime (syscall.RawSyscall): each is on a non-blocking descriptor (a
// socket, the eventfd) or is epoll_wait with a zero timeout, so it
// returns at once (but for the blocking epoll_wait of a loop that leaves
// a processor to the rest of the server: rawEpollWait), and the runtime's entry and exit of a system call
// (unix.Read and unix.Write go through them: waking the sysmon thread,
// and letting another thread take the processor) are cost without
// purpose. A profile of BF.ADD at -P 16 (issue 15) had 5% of the
// server's CPU in those wake-ups and the context switches they cause.
// The log file's writes and fsyncs, which may block on the disk, keep
// the runtime's ordinary calls.

// rawRead is read(2) of fd into b, which must not be empty.
func rawRead(fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	return rawResult(n, e)
}

// rawWrite is write(2) of b to fd.
func rawWrite(fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	return rawResult(n, e)
}

// rawEpollWait is epoll_wait(2) on epfd for up to ms milliseconds (0:
// the events ready now; -1: no limit), into events, which must not be
// empty. Only an event loop that leaves a processor to the rest of the
// server waits (eventLoop, in loop_linux.go, says why that is safe).
func rawEpollWait(epfd int, events []unix.EpollEvent, ms int) (int, error) {
	n, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), uintptr(ms), 0, 0)
	return rawResult(n, e)
}

// rawResult is a system call's result as unix's wrappers give it: -1 and
// the error number on failure.
func rawResult(n uintptr, e syscall.Errno) (int, error) {
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// rawNanosleep sleeps for d (or less, when a signal interrupts it): a
// busy loop's nap (loop_poll_linux.go), short enough not to tell the
// runtime, as rawEpollWait's waits are.
func rawNanosleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	syscall.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}
