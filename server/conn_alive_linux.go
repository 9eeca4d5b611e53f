package server

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerGone reports whether the client has closed its end of the
// connection (or it failed), without reading from it: a poll with zero
// timeout for POLLRDHUP, POLLHUP or POLLERR. Long commands (KEYS, SCAN
// with a large COUNT) call it between batches and stop early, as a
// client that left will never read the reply. A client that only shut
// down its writing half looks the same and gets an error reply.
func (c *conn) peerGone() bool {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(fds, 0)
		gone = err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
	})
	return gone
}
