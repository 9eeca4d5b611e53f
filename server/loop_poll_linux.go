package server

import "time"

// Busy polling (docs/DESIGN.md §8, "Busy polling"). A blocking event loop
// that was busy for at least half of the last busyWindow polls its epoll
// set for up to Config.BusyPoll before it sleeps in epoll_wait, as long
// as its polls pay.
//
// Why. With clients that wait for each reply (redis-benchmark -P 1), a
// loop that sleeps between turns is woken by the kernel for nearly every
// turn: the client's write(2) pays for waking the loop's thread, and the
// loop pays for going to sleep and coming back (schedule, context
// switches). Polling for a few tens of microseconds finds the next input
// already there, so neither side pays: on 2 vCPUs shared with the
// benchmark client the client spent 1 µs less per request and the rate
// rose by about a tenth (docs/BENCHMARKS.md, "Busy polling").
//
// Cost. The polling is CPU time of the server's: at most Config.BusyPoll
// per idle gap, spent only while the loop is already at least half busy,
// so a lightly loaded server (one client, a trickle of commands) does not
// poll and sleeps as before; a loop that saturates its core never waits
// anyway. Between those, the loop's core stays busy while the load lasts,
// which a CPU quota (a container's) counts: a server that shares a small
// quota with other work should turn it off. Config.BusyPoll < 0 does.
//
// Paying. A turn is wall time, so a turn that waited rather than worked
// (for an fsync with appendfsync always, descheduled, in a garbage
// collection's pause) makes a trickle of commands look busy, and the
// polls after it find nothing. A window in which fewer than a quarter of
// the polls found input stops polling for 1, then 3, 7, … up to
// maxPollBackoff windows, whatever the busy share; a window whose polls
// paid ends the back-off.
//
// Napping. Spinning keeps the loop's core busy for the whole gap, so at
// -P 1 its CPU per request is the gap's length whatever the work costs.
// When many clients keep the loop fed, the loop sleeps once instead, in
// nanosleep (Config.PollNap, with the thread's timer slack cut to 1 µs),
// and then polls: a nanosleep is not a waiter on the epoll set, so the
// clients' writes still wake nobody, and the input of several clients
// gathers into one turn. It costs latency, up to the nap (plus the
// timer's lateness: 15–25 µs on this project's virtual machines), and
// costs throughput when the clients run out of work while the loop
// sleeps. A nap after which at least three quarters of the connections
// active in the last window have input waiting has starved them (the
// few-clients case: two or five clients waiting for their replies). A
// window in which more than a quarter of the naps starved their clients
// stops the napping, and the loop spins instead, for 1, 3, 7, … up to
// maxPollBackoff windows; a window whose naps did not ends the back-off.
// Measured (docs/BENCHMARKS.md, "Naps instead of spins"): at -P 1 with
// 50 clients the same rate for 0.6–1.6 µs less CPU per request.
//
// Connections off the loop. A loop with connections off it (a slow
// command, a run waiting on the Redis backend) neither polls nor naps:
// their goroutines need the CPU a poll would take (on the Redis backend
// at -P 1, polling took 1.4–1.6 µs a request for no more requests), and
// a nap would not see them come back through the inbox (its eventfd),
// which wakes a loop asleep in epoll_wait.
//
// Concurrency: a busyPoll belongs to its loop's goroutine.
type busyPoll struct {
	limit   time.Duration // longest poll before sleeping (0: never poll)
	hot     bool          // the last window was busy enough to poll in, and its polls paid
	start   time.Time     // of the current window
	busy    time.Duration // spent in turns since start
	tries   int           // polls since start that found nothing at once
	saved   int           // of them, those that found input before the limit
	pollOff backOff       // after polls that did not pay
	ended   time.Time     // when the last turn ended: the polling's start
	found   bool          // the last wait's poll found events (turned counts its time)
	shard   *statShard    // the loop's counters: busyPolls, pollNanos, pollNaps

	nap        time.Duration // how long a nap is (0: never nap, spin)
	napping    bool          // this window naps rather than spins
	active     int           // connections that sent input since start (noteInput)
	lastActive int           // of them, in the last window
	naps       int           // naps since start
	starved    int           // of them, those after which the clients all waited on the loop
	napOff     backOff       // after naps that starved the clients
}

// backOff is a back-off in windows, after windows whose tries failed:
// 1, then 3, 7, … up to maxPollBackoff windows without trying; a window
// whose tries paid resets it.
type backOff struct {
	skip   int // windows still to pass without trying
	length int // of the last back-off
}

// end ends a window whose tries failed or paid (or neither: none were
// made), and reports whether the next window may try.
func (b *backOff) end(failed, paid bool) bool {
	switch {
	case failed:
		b.length = min(2*b.length+1, maxPollBackoff)
		b.skip = b.length
	case paid:
		b.length = 0
	}
	if b.skip > 0 {
		b.skip--
		return false
	}
	return true
}

const (
	// busyWindow is how long the loop's busy share is measured over
	// before it decides again whether to poll.
	busyWindow = 10 * time.Millisecond
	// maxPollBackoff is the longest back-off after polls that did not
	// pay, in windows (63: about 0.6 s).
	maxPollBackoff = 63
)

// turned records a turn that ran from from to to (the time waiting for
// events, polling included, is not a turn's).
func (p *busyPoll) turned(from, to time.Time) {
	if p.limit <= 0 { // the loop does not call it then, but the tests may
		return
	}
	if p.found { // the wait since the last turn was all polling
		p.found = false
		p.shard.pollNanos.Add(int64(from.Sub(p.ended)))
	}
	p.ended = to
	p.busy += to.Sub(from)
	if elapsed := to.Sub(p.start); elapsed >= busyWindow {
		polledInVain := p.tries > 0 && 4*p.saved < p.tries
		p.hot = p.pollOff.end(polledInVain, p.saved > 0) && 2*p.busy >= elapsed
		p.decideNapping()
		p.start, p.busy, p.tries, p.saved = to, 0, 0, 0
	}
}

// decideNapping ends a window for the naps: whether the next window naps
// or spins, and the back-off after naps that starved their clients.
func (p *busyPoll) decideNapping() {
	starvedThem := p.naps > 0 && 4*p.starved > p.naps
	p.napping = p.napOff.end(starvedThem, p.naps > 0) && p.nap > 0 && p.hot
	p.lastActive, p.active, p.naps, p.starved = p.active, 0, 0, 0
}

// noteInput counts a connection's input read at now, whose last input
// before it was read at last: the first of the window makes the
// connection one of the window's active ones.
func (p *busyPoll) noteInput(last time.Time) {
	if last.Before(p.start) {
		p.active++
	}
}

// spin polls l's epoll set until events are ready (their number) or the
// limit has passed (0), when the loop is hot and has no connections off
// it, or naps once and polls when it naps (napOnce); else it returns 0
// at once.
// Events a later poll found, not the first, count as a sleep saved
// (statShard.busyPolls), and the time from the turn's end to the poll
// that found them, or to the limit, as polling (statShard.pollNanos).
func (p *busyPoll) spin(l *eventLoop) int {
	if !p.hot || l.away > 0 {
		return 0
	}
	if n := l.poll(); n > 0 {
		return n // a sleeping wait would have returned at once too
	}
	p.tries++
	if p.napping {
		return p.napOnce(l)
	}
	until := p.ended.Add(p.limit) // one clock read fewer a turn
	for {
		if n := l.poll(); n > 0 {
			p.saved++
			p.shard.busyPolls.Add(1)
			p.found = true
			return n
		}
		if now := time.Now(); now.After(until) {
			p.shard.pollNanos.Add(int64(now.Sub(p.ended)))
			return 0
		}
	}
}

// napOnce sleeps for the nap and polls once: the events it found, a
// sleep in epoll_wait saved (statShard.busyPolls), or 0. The nap is not
// CPU time, so it is counted apart (statShard.pollNaps), not as polling.
func (p *busyPoll) napOnce(l *eventLoop) int {
	rawNanosleep(p.nap)
	p.naps++
	p.shard.pollNaps.Add(1)
	n := l.poll()
	if n > 0 {
		p.saved++
		p.shard.busyPolls.Add(1)
		if 4*n >= 3*p.lastActive {
			p.starved++
		}
	}
	return n
}
