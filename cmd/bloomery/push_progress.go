package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// transfer shows how far a push or pull is, on one line of standard
// error rewritten in place: bytes done of the total and the time so far,
// or only the time when the bytes done cannot be known. It draws only on
// a terminal and for filters of at least transferMinBytes; a nil
// *transfer does nothing, so callers need no checks.
type transfer struct {
	w        io.Writer
	verb     string
	total    uint64
	poll     func() uint64 // bytes done, asked from the drawing goroutine; nil: use set
	setBytes atomic.Uint64
	known    bool // poll or set give the bytes done
	start    time.Time

	quit chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// transferMinBytes is the smallest filter that gets a progress line: one
// that takes more than a few round trips.
const transferMinBytes = 16 << 20

// transferEvery is how often the line is redrawn.
const transferEvery = 200 * time.Millisecond

// transferTerminal reports whether w is a terminal; tests replace it.
var transferTerminal = isTerminal

// startTransfer starts drawing the progress of verb ("push", "pull") on
// w for total bytes. poll, if not nil, says how many bytes are done;
// otherwise the caller reports them with set, or not at all (known:
// false).
func startTransfer(w io.Writer, verb string, total uint64, poll func() uint64, known bool) *transfer {
	if total < transferMinBytes || !transferTerminal(w) {
		return nil
	}
	t := &transfer{w: w, verb: verb, total: total, poll: poll, known: known || poll != nil,
		start: time.Now(), quit: make(chan struct{})}
	t.wg.Add(1)
	go t.run()
	return t
}

func (t *transfer) run() {
	defer t.wg.Done()
	tick := time.NewTicker(transferEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.quit:
			return
		case <-tick.C:
			t.draw(t.bytesDone())
		}
	}
}

func (t *transfer) bytesDone() uint64 {
	if t.poll != nil {
		return t.poll()
	}
	return t.setBytes.Load()
}

func (t *transfer) draw(done uint64) {
	elapsed := time.Since(t.start).Round(100 * time.Millisecond)
	if !t.known {
		fmt.Fprintf(t.w, "\r%s: %s, %v\x1b[K", t.verb, humanBytes(t.total), elapsed)
		return
	}
	done = min(done, t.total)
	fmt.Fprintf(t.w, "\r%s: %s of %s (%.0f%%), %v\x1b[K", t.verb, humanBytes(done), humanBytes(t.total),
		100*float64(done)/float64(t.total), elapsed)
}

// set records that n bytes are done.
func (t *transfer) set(n uint64) {
	if t != nil {
		t.setBytes.Store(n)
	}
}

// stop ends the drawing and erases the line. It may be called more than
// once.
func (t *transfer) stop() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		close(t.quit)
		t.wg.Wait()
		fmt.Fprint(t.w, "\r\x1b[K")
	})
}

// done stops the drawing and leaves a last line saying how long it took.
func (t *transfer) done() {
	if t == nil {
		return
	}
	t.stop()
	d := time.Since(t.start)
	fmt.Fprintf(t.w, "%s: %s in %v (%s/s)\n", t.verb, humanBytes(t.total), d.Round(time.Millisecond),
		humanBytes(uint64(float64(t.total)/max(d.Seconds(), 1e-9))))
}
