package server

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// haveEventLoop: Linux has the event loop (epoll).
const haveEventLoop = true

// An event loop serves many connections from one goroutine, as Redis
// does (docs/DESIGN.md §8, step 1). Each iteration:
//
//  1. epoll_wait (level-triggered) for the connections that have input
//     or room for output, and for the loop's eventfd, which other
//     goroutines write to hand it new connections, finished off-loop
//     commands and Shutdown's requests (the inbox). How it waits when
//     nothing is ready depends on whether the loops leave a processor
//     (GOMAXPROCS) to the rest of the process, counting the blocking
//     loops of every Server in it (block, reserveBlocking):
//     - they do (the default: GOMAXPROCS − 1 loops, at least 1, in the
//     first Server of a process): it
//     blocks in epoll_wait itself, as Redis does, without telling the
//     runtime (RawSyscall6), so it keeps its processor and wakes with
//     its events in one system call. The runtime's signals interrupt it
//     (EINTR): a garbage collection's stop-the-world and sysmon's
//     preemption of a goroutine running for 10 ms reach it within
//     microseconds, and the processor left over runs everything else
//     (accepting, the log's fsync, off-loop commands, timers). Against
//     parking in Go's scheduler (below) this saved about 1 µs of CPU per
//     request with clients that wait for each reply (-P 1), an eighth of
//     the server's whole cost there (docs/BENCHMARKS.md, issue 15);
//     - they do not: epoll_wait never blocks, and when nothing is ready
//     the goroutine parks in Go's scheduler until the epoll descriptor
//     becomes readable (it is registered with Go's own poller, through
//     an os.File) or the next check of timeouts comes. A blocked loop
//     would hold the only processors there, and a blocking call through
//     the runtime (syscall.Syscall) makes it hand its processor to
//     another thread and take one back on waking: a third more CPU,
//     measured;
//  2. read each connection with input once, and run every whole command
//     in its buffer (resp.Reader.Complete tells, so the parser never
//     waits); a command that may take long (command.slow) runs on a
//     goroutine of its own while the connection is out of the epoll set
//     and its later commands wait, in order;
//  3. before sleeping again: make the log durable once for every write
//     command the iteration ran, on all its connections (waitDurable; the
//     leader of the group commit also takes the other loops' records),
//     then write each connection's replies, once; what the socket does
//     not take waits for EPOLLOUT.
//
// Concurrency: everything of an eventLoop but the inbox belongs to its
// goroutine, and so does every conn it serves, except while that conn's
// command runs off the loop: then the command's goroutine owns the conn
// (its reader, writer and protocol state) and the loop touches only the
// output already handed to it (loopConn.out) until the goroutine posts
// the conn back through the inbox.
type eventLoop struct {
	srv    *Server
	epfd   int
	block  bool            // wait blocks in epoll_wait (see above)
	epfile *os.File        // epfd, in Go's poller: parking until it is readable (nil when block)
	eprc   syscall.RawConn // of epfile
	parkBy time.Time       // epfile's read deadline
	wakefd int             // an eventfd
	shard  *statShard
	poller busyPoll // when block: whether to poll before sleeping (loop_poll_linux.go)
	events []unix.EpollEvent
	conns  []*loopConn // by file descriptor
	open   int         // connections in conns
	away   int         // of them, those off the loop (busy): they come back through the inbox

	now      time.Time   // when the current iteration woke up
	lastTick time.Time   // of the timeouts' check
	flushes  []*loopConn // connections with replies to send before sleeping
	again    []*loopConn // connections with whole commands left for the next iteration
	spare    []*loopConn
	closing  bool // Shutdown began: no more input is read

	mu       sync.Mutex // guards the inbox below
	incoming []*loopConn
	finished []*loopConn
	pushed   []*loopConn // connections with pushes in their mailbox (push.go)
	requests loopRequest
	stopped  bool
	woken    atomic.Bool // a wakeup is written and not yet read
	done     chan struct{}
}

// loopRequest is what Shutdown asks of a loop.
type loopRequest uint8

const (
	loopClose loopRequest = 1 << iota // finish: answer no more commands, close each client once its replies are sent
	loopForce                         // close every client now
	loopStop                          // end the loop
)

// loopTick is how often the loop checks timeouts.
const loopTick = 100 * time.Millisecond

// newEventLoop makes a loop counting its commands in shard; block: it
// waits blocked in epoll_wait (see eventLoop).
func newEventLoop(s *Server, shard *statShard, block bool) (*eventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("server: epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("server: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}
	err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev)
	if err == nil && !block {
		err = unix.SetNonblock(epfd, true) // so that os.NewFile puts it in Go's poller
	}
	if err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, fmt.Errorf("server: epoll: %w", err)
	}
	l := &eventLoop{srv: s, epfd: epfd, block: block, wakefd: wakefd, shard: shard,
		poller: busyPoll{limit: s.cfg.BusyPoll, nap: max(0, s.cfg.PollNap), start: time.Now(), shard: shard},
		events: make([]unix.EpollEvent, 256), done: make(chan struct{})}
	if block {
		return l, nil // epfd stays out of Go's poller: a blocking descriptor
	}
	l.epfile = os.NewFile(uintptr(epfd), "epoll")
	if l.eprc, err = l.epfile.SyscallConn(); err != nil {
		l.epfile.Close()
		unix.Close(wakefd)
		return nil, fmt.Errorf("server: epoll: %w", err)
	}
	return l, nil
}

// run is the loop's goroutine.
func (l *eventLoop) run() {
	defer close(l.done)
	if l.block {
		defer blockingLoops.Add(-1) // its place among the process's blocking loops (reserveBlocking)
		if l.poller.limit > 0 && l.poller.nap > 0 {
			// The naps' timer slack is the thread's: the loop keeps its
			// thread, and the thread a slack of 1 µs, not Linux's 50.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(time.Microsecond), 0, 0, 0); err != nil {
				l.srv.log.Warn("event loop: the naps keep the default timer slack", "err", err)
			} else {
				defer unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) // the thread's default again, for other goroutines
			}
		}
	}
	for {
		n := l.wait()
		l.now = time.Now()
		for _, ev := range l.events[:n] {
			if int(ev.Fd) == l.wakefd {
				if l.takeInbox() {
					l.end()
					return
				}
				continue
			}
			lc := l.conn(int(ev.Fd))
			if lc == nil {
				continue
			}
			if ev.Events&unix.EPOLLOUT != 0 {
				l.queueFlush(lc)
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				l.receive(lc)
			}
		}
		l.runAgain()
		l.flushAll()
		if l.now.Sub(l.lastTick) >= loopTick {
			l.lastTick = l.now
			l.checkTimeouts()
		}
		if l.block && l.poller.limit > 0 {
			l.poller.turned(l.now, time.Now())
		}
	}
}

// wait returns the number of events ready in l.events: at once when
// there are, or when commands are waiting (again); else it parks until
// some are, or until the next check of timeouts while there are
// connections (returning 0).
func (l *eventLoop) wait() int {
	if len(l.again) > 0 {
		return l.poll()
	}
	by := time.Time{} // no connections: sleep until the inbox is written
	if l.open > 0 {
		by = l.lastTick.Add(loopTick)
	}
	if l.block {
		if n := l.poller.spin(l); n > 0 {
			return n
		}
		return l.blockingPoll(by)
	}
	if !by.Equal(l.parkBy) {
		l.parkBy = by
		l.epfile.SetReadDeadline(by)
	}
	// Read returns when the function reports true, or with an error at
	// the deadline; between calls it waits for the descriptor to be
	// readable. Its first call polls at once: a busy loop does not park,
	// and an idle one makes one empty epoll_wait before parking, not two.
	n := 0
	l.eprc.Read(func(uintptr) bool {
		n = l.poll()
		return n > 0
	})
	return n
}

// blockingPoll collects the ready events, waiting in epoll_wait until
// there are some or until by (for ever when by is zero); 0 when a signal
// interrupted it.
func (l *eventLoop) blockingPoll(by time.Time) int {
	ms := -1
	if !by.IsZero() {
		ms = max(0, int((time.Until(by)+time.Millisecond-1)/time.Millisecond))
	}
	return l.pollResult(rawEpollWait(l.epfd, l.events, ms))
}

// poll collects the ready events without waiting.
func (l *eventLoop) poll() int {
	return l.pollResult(rawEpollWait(l.epfd, l.events, 0))
}

// pollResult is the number of events an epoll_wait returned, 0 on an
// error (logged, after a pause, unless a signal interrupted the call).
func (l *eventLoop) pollResult(n int, err error) int {
	if err != nil {
		if err != unix.EINTR {
			l.srv.log.Error("event loop: epoll_wait failed", "err", err)
			time.Sleep(10 * time.Millisecond)
		}
		return 0
	}
	return n
}

// conn returns the connection of fd, or nil.
func (l *eventLoop) conn(fd int) *loopConn {
	if fd < 0 || fd >= len(l.conns) {
		return nil
	}
	return l.conns[fd]
}

// wake makes the loop's epoll_wait return to read its inbox.
func (l *eventLoop) wake() {
	if l.woken.CompareAndSwap(false, true) {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		rawWrite(l.wakefd, one[:])
	}
}

// add hands the loop a new connection. It reports false when the loop
// has stopped (the caller closes the connection).
func (l *eventLoop) add(lc *loopConn) bool {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return false
	}
	l.incoming = append(l.incoming, lc)
	l.mu.Unlock()
	l.wake()
	return true
}

// post hands back a connection whose command ran off the loop. After the
// loop has stopped, the connection is closed here.
func (l *eventLoop) post(lc *loopConn) {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		lc.release()
		return
	}
	l.finished = append(l.finished, lc)
	l.mu.Unlock()
	l.wake()
}

// notify tells the loop that lc's mailbox has pushes to send (push.go).
func (l *eventLoop) notify(lc *loopConn) {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.pushed = append(l.pushed, lc)
	l.mu.Unlock()
	l.wake()
}

// request asks the loop for r (Shutdown's steps).
func (l *eventLoop) request(r loopRequest) {
	l.mu.Lock()
	l.requests |= r
	l.mu.Unlock()
	l.wake()
}

// takeInbox serves what the inbox holds; it reports whether the loop is
// to end.
func (l *eventLoop) takeInbox() bool {
	var b [8]byte
	rawRead(l.wakefd, b[:])
	l.woken.Store(false) // before taking: a later post writes again
	l.mu.Lock()
	incoming, finished, pushed, req := l.incoming, l.finished, l.pushed, l.requests
	l.incoming, l.finished, l.pushed, l.requests = nil, nil, nil, 0
	l.mu.Unlock()
	for _, lc := range incoming {
		l.start(lc)
	}
	for _, lc := range finished {
		l.resume(lc)
	}
	for _, lc := range pushed {
		if !lc.closed {
			l.queueFlush(lc) // send writes the mailbox
		}
	}
	if req&loopClose != 0 && !l.closing {
		l.beginClosing()
	}
	if req&loopForce != 0 {
		l.closeAll()
	}
	return req&loopStop != 0
}

// beginClosing stops reading: each client gets the reply of the command
// it is running (and "ERR server is shutting down" for a whole command
// still waiting), then its connection closes once its replies are sent,
// or at Shutdown's cutoff.
func (l *eventLoop) beginClosing() {
	l.closing = true
	for _, lc := range l.conns {
		if lc == nil || lc.busy {
			continue
		}
		l.process(lc)
		lc.c.quit = true
		l.queueFlush(lc)
	}
}

// closeAll closes every connection now (Shutdown's time is up).
func (l *eventLoop) closeAll() {
	for _, lc := range l.conns {
		if lc != nil {
			l.closeConn(lc)
		}
	}
}

// end stops the loop: its connections are closed, and connections
// posted or handed to it later are closed by whoever posts them.
func (l *eventLoop) end() {
	l.closeAll()
	l.mu.Lock()
	l.stopped = true
	incoming, finished := l.incoming, l.finished
	l.incoming, l.finished = nil, nil
	l.mu.Unlock()
	for _, lc := range append(incoming, finished...) {
		lc.release()
	}
	if l.epfile != nil {
		l.epfile.Close() // and epfd
	} else {
		unix.Close(l.epfd)
	}
	unix.Close(l.wakefd)
}

// queueFlush marks lc's replies to be sent before the loop sleeps.
func (l *eventLoop) queueFlush(lc *loopConn) {
	if !lc.flushQueued {
		lc.flushQueued = true
		l.flushes = append(l.flushes, lc)
	}
}

// queueAgain marks lc's buffered commands to be run in the next
// iteration, after this one's replies are sent.
func (l *eventLoop) queueAgain(lc *loopConn) {
	if !lc.againQueued {
		lc.againQueued = true
		l.again = append(l.again, lc)
	}
}

// runAgain runs the commands left from the previous iteration.
func (l *eventLoop) runAgain() {
	if len(l.again) == 0 {
		return
	}
	todo := l.again
	l.again = l.spare[:0]
	for _, lc := range todo {
		lc.againQueued = false
		if !lc.closed {
			l.process(lc)
		}
	}
	clear(todo)
	l.spare = todo[:0]
}

// flushAll sends the replies of the iteration: first the log is made
// durable, once for all of them, if a write command ran.
func (l *eventLoop) flushAll() {
	if len(l.flushes) == 0 {
		return
	}
	var err error
	waited := false
	for _, lc := range l.flushes {
		if !lc.closed && !lc.busy && len(lc.c.unlogged) > 0 {
			err, waited = l.srv.persist.waitDurable(), true
			break
		}
	}
	for i, lc := range l.flushes {
		l.flushes[i] = nil
		lc.flushQueued = false
		if lc.closed {
			continue
		}
		if !lc.busy {
			lc.c.makeDurable(waited, err)
		}
		l.send(lc)
	}
	l.flushes = l.flushes[:0]
}

// checkTimeouts closes the clients idle for IdleTimeout, those that took
// none of their replies for WriteTimeout, and, after Shutdown's cutoff,
// those with replies still unsent.
func (l *eventLoop) checkTimeouts() {
	idle, stall := l.srv.cfg.IdleTimeout, l.srv.cfg.WriteTimeout
	cutoff := l.srv.writeCutoff.Load()
	for _, lc := range l.conns {
		if lc == nil || lc.busy {
			continue
		}
		switch {
		case lc.pending() > 0 && cutoff != 0 && l.now.UnixNano() >= cutoff:
			l.closeConn(lc)
		case lc.pending() > 0 && l.now.Sub(lc.lastSent) >= stall:
			if !l.srv.closing.Load() {
				l.srv.log.Info("client did not read its replies; closing connection", "client", lc.c.id,
					"addr", lc.c.remote, "write_timeout", stall)
			}
			l.closeConn(lc)
		case lc.pending() == 0 && idle > 0 && l.now.Sub(lc.lastActive()) >= idle:
			l.srv.log.Debug("idle client timed out", "client", lc.c.id)
			l.closeConn(lc)
		}
	}
}
