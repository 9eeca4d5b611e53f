package server

import (
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/bloomery/bloom/internal/resp"
	"golang.org/x/sys/unix"
)

// loopConn is a connection served by an event loop: its socket, its
// input and the output handed to the loop.
type loopConn struct {
	c    *conn
	loop *eventLoop
	fd   int
	in   resp.Buffer
	args [][]byte

	out  []byte // replies taken from c.w and not yet sent: out[sent:]
	sent int

	interest    uint32   // the epoll events asked for
	watched     bool     // in the epoll set
	busy        bool     // a command runs off the loop
	held        [][]byte // a command read but not run: it waits for the run before it (endRunAsync)
	heldErr     error    // the input's error, read after a pending run: answered once the run is
	heldClosing bool     // a command read after a pending run once the server was closing: refused once the run is answered
	stalled     bool     // commands wait for the replies to drain below loopBacklog
	eof         bool     // the client closed its end
	closed      bool
	flushQueued bool
	againQueued bool

	lastRead time.Time // the last byte received
	lastSent time.Time // the last progress sending replies (or when they started to wait)
}

// Tuning of a loop's connections.
const (
	loopReadChunk = 16 << 10  // least room offered to one read
	loopBatch     = 64 << 10  // replies that end a connection's turn, to be sent before more commands run
	loopBacklog   = 256 << 10 // unsent replies at which the connection's input waits
	loopKeep      = 64 << 10  // most buffer an idle connection keeps, each way
)

// errNotSocket: a connection the loop cannot serve (no socket under it).
var errNotSocket = errors.New("server: not a socket")

// newLoopConn takes the socket of nc (a *net.TCPConn or *net.UnixConn)
// for an event loop: a duplicate of its descriptor, non-blocking as Go
// made it; nc itself is closed.
func (s *Server) newLoopConn(nc net.Conn, id int64, l *eventLoop) (*conn, error) {
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nil, errNotSocket
	}
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	cerr := rc.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) })
	if cerr != nil || err != nil {
		return nil, errors.Join(cerr, err)
	}
	c := s.newConnState(id, nc.RemoteAddr(), nc.LocalAddr(), l.shard)
	nc.Close()
	lc := &loopConn{c: c, loop: l, fd: fd}
	c.lc = lc
	c.r = resp.NewBufferReader(&lc.in, s.cfg.Limits)
	c.r.SetAuthRequired(!c.authed)
	c.w = resp.NewWriter(nil) // the loop sends what it holds (send)
	return c, nil
}

// pending is the number of reply bytes handed to the loop and unsent.
func (lc *loopConn) pending() int { return len(lc.out) - lc.sent }

// lastActive is when the client last sent a byte or took a reply.
func (lc *loopConn) lastActive() time.Time {
	if lc.lastSent.After(lc.lastRead) {
		return lc.lastSent
	}
	return lc.lastRead
}

// start serves a new connection.
func (l *eventLoop) start(lc *loopConn) {
	if l.closing {
		lc.release()
		return
	}
	for lc.fd >= len(l.conns) {
		l.conns = append(l.conns, make([]*loopConn, len(l.conns)+64)...)
	}
	l.conns[lc.fd] = lc
	l.open++
	lc.lastRead, lc.lastSent = l.now, l.now
	l.watch(lc)
}

// watch puts lc in the epoll set with the events its state asks for:
// input unless its replies pile up or it is ending, output while
// replies wait.
func (l *eventLoop) watch(lc *loopConn) {
	want := uint32(0)
	if !lc.eof && !lc.c.quit && !l.closing && lc.pending() < loopBacklog {
		want = unix.EPOLLIN
	}
	if lc.pending() > 0 {
		want |= unix.EPOLLOUT
	}
	if lc.watched && want == lc.interest {
		return
	}
	ev := unix.EpollEvent{Events: want, Fd: int32(lc.fd)}
	op := unix.EPOLL_CTL_MOD
	if !lc.watched {
		op = unix.EPOLL_CTL_ADD
	}
	if err := unix.EpollCtl(l.epfd, op, lc.fd, &ev); err != nil {
		l.srv.log.Warn("event loop: epoll_ctl failed; closing connection", "client", lc.c.id, "err", err)
		l.closeConn(lc)
		return
	}
	lc.watched, lc.interest = true, want
}

// unwatch takes lc out of the epoll set.
func (l *eventLoop) unwatch(lc *loopConn) {
	if lc.watched {
		unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, lc.fd, nil)
		lc.watched = false
	}
}

// receive reads what lc's client sent, once, and runs the whole commands.
func (l *eventLoop) receive(lc *loopConn) {
	if lc.busy || lc.closed || lc.eof || l.closing || lc.pending() >= loopBacklog {
		return
	}
	n, err := rawRead(lc.fd, lc.in.Space(loopReadChunk))
	switch {
	case n > 0:
		lc.in.Commit(n)
		l.poller.noteInput(lc.lastRead)
		lc.lastRead = l.now
		l.process(lc)
	case n == 0:
		lc.eof = true // answered what it sent, the connection closes
		l.queueFlush(lc)
	case err != unix.EAGAIN && err != unix.EINTR:
		lc.c.ended(err)
		l.closeConn(lc)
	}
}

// process runs lc's whole commands, until one runs off the loop or its
// replies are enough for one turn. Pipelined commands of one kind on one
// filter run together (conn_run.go); a run pending when the turn ends is
// run first. On the Redis backend a run is handed to its lane without
// waiting (endRunAsync): lc leaves the epoll set, as for a command off
// the loop, and a command read after it waits in lc.held.
func (l *eventLoop) process(lc *loopConn) {
	if lc.busy || lc.closed {
		return
	}
	c := lc.c
	c.clock = 0 // input that waited for this turn
	defer l.queueFlush(lc)
	switch err := lc.heldErr; { // met after a run now answered
	case err != nil: // the input's error
		lc.heldErr = nil
		c.ended(err)
		c.quit = true
		return
	case lc.heldClosing: // a command read once the server was closing
		lc.heldClosing = false
		c.error("ERR server is shutting down")
		c.quit = true
		return
	}
	if args := lc.held; args != nil {
		lc.held = nil
		if !l.dispatch(lc, args) {
			return
		}
	}
	for !c.quit {
		if c.w.Buffered() >= loopBatch {
			if l.endRun(lc) {
				return
			}
			l.queueAgain(lc) // after this turn's replies are sent
			return
		}
		if lc.pending() >= loopBacklog { // as on entry: pending moves only in send
			if l.endRun(lc) {
				return
			}
			lc.stalled = true // until send drains the replies
			return
		}
		if !c.r.Complete() {
			break
		}
		args, err := c.r.ReadCommand(lc.args)
		lc.args = args
		if err != nil {
			if l.endRun(lc) { // the error is answered after the run
				lc.heldErr = err
				return
			}
			c.ended(err)
			c.quit = true
			return
		}
		if l.srv.closing.Load() {
			if l.endRun(lc) { // the command is refused after the run
				lc.heldClosing = true
				return
			}
			c.error("ERR server is shutting down")
			c.quit = true
			return
		}
		if !l.dispatch(lc, args) {
			return
		}
	}
	if l.endRun(lc) { // on the Redis backend the run the input ended with; elsewhere joinRun ran it
		return
	}
	if lc.in.Len() == 0 {
		clear(lc.args[:cap(lc.args)]) // they point into the buffer
		lc.in.Release(loopKeep)
	}
}

// dispatch runs the command args of lc: it joins the run being gathered,
// starts one, runs off the loop (then dispatch reports false: lc is
// busy), or runs here. A run args do not join ends first; on the Redis
// backend without waiting, args held until it is answered (false).
func (l *eventLoop) dispatch(lc *loopConn, args [][]byte) bool {
	c := lc.c
	if c.joinRun(args) {
		return true
	}
	if l.endRunAsync(lc, args) { // joinRun left it pending (asyncRuns)
		return false
	}
	cmd := c.resolve(args)
	if cmd == nil || c.startRun(cmd, args) {
		return true
	}
	if c.slowCall(cmd, args) {
		l.offload(lc, cmd, args)
		return false
	}
	c.execute(cmd, args)
	return true
}

// endRun ends lc's pending run, if any: on the Redis backend it is handed
// to its lane without waiting (endRunAsync; then endRun reports true: lc
// is busy), elsewhere it runs here.
func (l *eventLoop) endRun(lc *loopConn) bool {
	if l.endRunAsync(lc, nil) {
		return true
	}
	lc.c.endRun()
	return false
}

// endRunAsync hands lc's pending run to its lane without waiting, where
// runs end so (conn.endRunAsync), and reports whether it did: lc is
// then busy until the run is answered, and held (if not nil), a command
// read after the run, runs first when it resumes. held points into lc's
// input buffer, which no read moves while lc is busy.
func (l *eventLoop) endRunAsync(lc *loopConn, held [][]byte) bool {
	if !lc.c.endRunAsync(func() { l.post(lc) }) {
		return false
	}
	lc.held = held
	l.leave(lc)
	return true
}

// leave takes lc off the loop until it is posted back (resume): busy,
// counted in l.away, out of the epoll set.
func (l *eventLoop) leave(lc *loopConn) {
	lc.busy = true
	l.away++
	l.unwatch(lc)
}

// offload runs a slow command on a goroutine of its own; lc leaves the
// epoll set until it is posted back (resume), so its later commands wait.
func (l *eventLoop) offload(lc *loopConn, cmd *command, args [][]byte) {
	l.leave(lc)
	go func() {
		lc.c.clock = 0 // it waited for a goroutine
		lc.c.execute(cmd, args)
		l.post(lc)
	}()
}

// resume takes back a connection whose command ran off the loop.
func (l *eventLoop) resume(lc *loopConn) {
	lc.busy = false
	l.away--
	if lc.closed {
		lc.release() // closed meanwhile (Shutdown's time ran out)
		return
	}
	lc.c.finishAsync()
	l.process(lc) // while closing, the commands after it are refused, as on a goroutine
	if l.closing && !lc.busy {
		lc.c.quit = true
	}
	if !lc.busy { // not off the loop again: a busy connection's input would wake the loop for nothing
		l.watch(lc)
	}
}

// send hands lc's new replies to the loop's output and writes what the
// socket takes; the rest waits for EPOLLOUT. A connection that is done
// (QUIT, a protocol error, the client's end closed, shutdown) closes
// once everything is sent.
func (l *eventLoop) send(lc *loopConn) {
	c := lc.c
	if !lc.busy {
		c.writePushes()
	}
	if !lc.busy && c.w.Buffered() > 0 {
		if lc.pending() == 0 {
			lc.out, lc.sent = lc.out[:0], 0
			if !l.write(lc, c.w.Bytes()) {
				return
			}
		} else {
			lc.out = append(lc.out, c.w.Bytes()...)
		}
		c.w.Reset()
	}
	if lc.pending() > 0 && !l.write(lc, nil) {
		return
	}
	if lc.pending() == 0 {
		lc.out, lc.sent = lc.out[:0], 0
		if cap(lc.out) > loopKeep {
			lc.out = nil
		}
		if (c.quit || lc.eof) && !lc.busy && !lc.againQueued {
			l.closeConn(lc)
			return
		}
	}
	if lc.stalled && lc.pending() < loopBacklog {
		lc.stalled = false
		l.queueAgain(lc)
	}
	if !lc.busy {
		l.watch(lc)
	}
}

// write sends b (nil: the output pending) once; what the socket does not
// take is kept in lc.out. It reports false if the connection was closed
// on an error.
func (l *eventLoop) write(lc *loopConn, b []byte) bool {
	fresh := b != nil
	if !fresh {
		b = lc.out[lc.sent:]
	}
	n, err := rawWrite(lc.fd, b)
	if n < 0 {
		n = 0
	}
	if n > 0 || lc.pending() == 0 {
		lc.lastSent = l.now // progress, or the start of a wait
	}
	if fresh {
		lc.out = append(lc.out, b[n:]...)
	} else {
		lc.sent += n
	}
	if err != nil && err != unix.EAGAIN && err != unix.EINTR {
		lc.c.ended(writeError{err})
		l.closeConn(lc)
		return false
	}
	return true
}

// closeConn closes lc. A connection whose command runs off the loop is
// only shut down (its command stops early if it checks peerGone): its
// descriptor is closed when the command posts it back.
func (l *eventLoop) closeConn(lc *loopConn) {
	if lc.closed {
		return
	}
	lc.closed = true
	l.conns[lc.fd] = nil
	l.open--
	l.unwatch(lc)
	if lc.busy {
		unix.Shutdown(lc.fd, unix.SHUT_RDWR)
		return
	}
	lc.release()
}

// release closes lc's descriptor and ends its bookkeeping in the server.
func (lc *loopConn) release() {
	unix.Close(lc.fd)
	lc.fd = -1
	lc.in = resp.Buffer{}
	lc.out, lc.args = nil, nil
	lc.c.srv.connClosed(lc.c)
}
