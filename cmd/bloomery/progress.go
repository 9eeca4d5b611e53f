package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress draws a one-line progress bar on standard error while build
// reads its input: percentage, items, items per second and time left. It
// is drawn only when standard error is a terminal and the input size is
// known (files, or standard input redirected from a file); a nil
// *progress draws nothing, so callers need no checks.
type progress struct {
	w      io.Writer
	width  int   // terminal columns
	total  int64 // input bytes
	items  uint64
	now    func() time.Time
	start  time.Time
	drawn  time.Time // last draw
	dirty  bool      // a line is on the screen
	prefix string
}

// progressEvery is how often the bar is redrawn.
const progressEvery = 200 * time.Millisecond

// progressClock is the progress bar's clock. Tests replace it.
var progressClock = time.Now

// terminalWidth reports whether w is a terminal and its width. Tests
// replace it.
var terminalWidth = func(w io.Writer) (int, bool) {
	if !isTerminal(w) {
		return 0, false
	}
	width, _, err := term.GetSize(int(w.(*os.File).Fd()))
	if err != nil || width <= 0 {
		width = 80
	}
	return width, true
}

// newProgress returns a progress bar named prefix for total input bytes
// on w, or nil when w is not a terminal or total is unknown (< 0).
func newProgress(w io.Writer, prefix string, total int64) *progress {
	width, ok := terminalWidth(w)
	if !ok || total < 0 {
		return nil
	}
	p := &progress{w: w, width: width, total: total, now: progressClock, prefix: prefix}
	p.start = p.now()
	p.drawn = p.start
	return p
}

// update records n more items and done input bytes so far, redrawing at
// most every progressEvery.
func (p *progress) update(n int, done int64) {
	if p == nil {
		return
	}
	p.items += uint64(n)
	now := p.now()
	if now.Sub(p.drawn) < progressEvery {
		return
	}
	p.drawn = now
	fmt.Fprint(p.w, "\r"+p.line(done, now.Sub(p.start))+"\x1b[K")
	p.dirty = true
}

// line is the text of the bar after elapsed with done bytes read.
func (p *progress) line(done int64, elapsed time.Duration) string {
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(done)/float64(p.total), 1)
	}
	rate := float64(p.items) / max(elapsed.Seconds(), 1e-9)
	eta := "--:--"
	if frac > 0 {
		left := time.Duration(float64(elapsed) * (1 - frac) / frac)
		eta = formatClock(left)
	}
	stats := fmt.Sprintf(" %3.0f%%  %s items  %s/s  ETA %s", frac*100, shortCount(float64(p.items)), shortCount(rate), eta)
	bar := p.width - len(p.prefix) - len(stats) - 4
	if bar < 10 {
		return p.prefix + stats
	}
	full := int(frac * float64(bar))
	return p.prefix + " [" + strings.Repeat("=", full) + strings.Repeat(" ", bar-full) + "]" + stats
}

// finish erases the bar.
func (p *progress) finish() {
	if p == nil || !p.dirty {
		return
	}
	fmt.Fprint(p.w, "\r\x1b[K")
	p.dirty = false
}

// shortCount writes a count with an SI suffix: 950, 12.3k, 4.6M.
func shortCount(v float64) string {
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.div {
			return fmt.Sprintf("%.1f%s", v/u.div, u.suffix)
		}
	}
	return fmt.Sprintf("%.0f", v)
}

// formatClock writes a duration as m:ss or h:mm:ss.
func formatClock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
