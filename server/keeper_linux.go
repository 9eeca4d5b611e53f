package server

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// The processor keeper: a goroutine that holds one processor (a P of
// Go's scheduler) asleep in the kernel, so that the process never has
// every processor idle while it serves.
//
// Why. Go's scheduler watchdog (sysmon) sleeps deeply while every
// processor is idle, and the next system call of any goroutine wakes it
// with its period reset to 20 µs; it then wakes 50,000 times a second
// for a millisecond or more before it slows down. A server whose
// goroutines all wait on the network between bursts (the Redis backend,
// where each batch waits on its round trip to Redis, and connections
// served by goroutines) has every processor idle again and again, so the
// watchdog never slows down: a profile of the stateless BF.ADD at -P 16
// had 13% of the server's CPU in sysmon's sleeps and wake-ups, 1.8%
// with the keeper (docs/BENCHMARKS.md, issue 15). The event loops do
// not need it: they wait in epoll_wait holding their processors
// (loop_linux.go), which is what the keeper does with nothing to serve.
//
// Cost. The keeper adds one processor to GOMAXPROCS for the processor it
// holds, so the rest of the process runs as before. It counts as a
// blocking event loop (blockingLoops), so loops started later still
// leave a processor to everything else, and event loops started later do
// not count its processor among those they may take (eventLoops). Its
// thread sleeps in epoll_wait and uses no CPU; the runtime's preemption
// signals (a collection's stop-the-world) interrupt it, as they interrupt
// a blocking loop, and without them (GODEBUG asyncpreemptoff) there is no
// keeper. Setting GOMAXPROCS stops the runtime's own updates of it (to a
// changed CPU limit of the container) for the life of the process; the
// last release sets back the value it found, unless someone else set
// GOMAXPROCS meanwhile. One keeper serves every Server of the process
// that asks for it; the last release stops it.

// keeperProcs is the number of processors a keeper adds to GOMAXPROCS.
const keeperProcs = 1

var keeper struct {
	mu           sync.Mutex
	refs         int
	epfd, wakefd int
	done         chan struct{} // closed when the keeper's goroutine has returned; nil: no keeper
	procs, set   int           // GOMAXPROCS before the keeper, and as it set it
}

// keptProcessors is the number of processors in GOMAXPROCS that a
// keeper holds (0 or keeperProcs): not there for event loops to take.
func keptProcessors() int {
	keeper.mu.Lock()
	defer keeper.mu.Unlock()
	if keeper.done == nil {
		return 0
	}
	return keeperProcs
}

// holdProcessor starts the keeper, or counts one more user of it; release
// (idempotent) counts one less and stops it after the last. Without the
// runtime's preemption signals (GODEBUG=asyncpreemptoff=1) a goroutine
// asleep in the kernel would stall every stop-the-world, so there is no
// keeper.
func holdProcessor() (release func(), err error) {
	keeper.mu.Lock()
	defer keeper.mu.Unlock()
	if keeper.refs == 0 {
		if !preemptSignals() {
			return func() {}, nil
		}
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("server: epoll_create1: %w", err)
		}
		wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err == nil {
			ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}
			if err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
				unix.Close(wakefd)
			}
		}
		if err != nil {
			unix.Close(epfd)
			return nil, fmt.Errorf("server: keeper: %w", err)
		}
		blockingLoops.Add(1) // before GOMAXPROCS grows: a loop starting meanwhile sees one processor fewer, not more
		keeper.procs = runtime.GOMAXPROCS(0)
		keeper.set = keeper.procs + keeperProcs
		runtime.GOMAXPROCS(keeper.set)
		keeper.epfd, keeper.wakefd, keeper.done = epfd, wakefd, make(chan struct{})
		go keep(epfd, keeper.done)
	}
	keeper.refs++
	return sync.OnceFunc(unholdProcessor), nil
}

// unholdProcessor is a release of holdProcessor.
func unholdProcessor() {
	keeper.mu.Lock()
	defer keeper.mu.Unlock()
	if keeper.refs--; keeper.refs > 0 || keeper.done == nil {
		return
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	rawWrite(keeper.wakefd, one[:])
	<-keeper.done // its processor is free
	unix.Close(keeper.epfd)
	unix.Close(keeper.wakefd)
	keeper.done = nil
	if runtime.GOMAXPROCS(0) == keeper.set { // else someone set it since: theirs stands
		runtime.GOMAXPROCS(keeper.procs)
	}
	blockingLoops.Add(-1)
}

// keep is the keeper's goroutine: asleep in epoll_wait on epfd, holding
// its processor (RawSyscall6 does not tell the runtime), until the
// eventfd in epfd is written. A signal's EINTR returns to Go code, where
// a pending preemption takes effect. On any other error it gives the
// processor back early (the descriptors stay open until the release;
// only a broken epoll set could do that: the loss is the keeper's
// purpose, not correctness).
func keep(epfd int, done chan struct{}) {
	defer close(done)
	events := make([]unix.EpollEvent, 1)
	for {
		n, err := rawEpollWait(epfd, events, -1)
		if n > 0 || (err != nil && err != unix.EINTR) {
			return
		}
	}
}
