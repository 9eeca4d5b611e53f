package server

import (
	"sync"
	"time"
)

// rateLog lets through at most one log line per interval for a kind of
// event that clients can cause at will (a failed AUTH), so that they
// cannot flood the log: the events in between are counted, and the next
// line logged says how many events it stands for. Safe for concurrent
// use.
type rateLog struct {
	every time.Duration

	mu      sync.Mutex
	next    time.Time // no line before
	pending int64     // events since the last line logged
}

// event records one event at now. It reports whether to log it and, if
// so, how many events the line stands for: this one and those not logged
// since the last line.
func (r *rateLog) event(now time.Time) (bool, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending++
	if now.Before(r.next) {
		return false, 0
	}
	n := r.pending
	r.pending, r.next = 0, now.Add(r.every)
	return true, n
}
