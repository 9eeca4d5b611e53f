package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// slowClock makes the progress bar's clock advance a second per reading,
// so that every update draws.
func slowClock(t *testing.T) {
	t.Helper()
	old := progressClock
	now := time.Unix(1e9, 0)
	progressClock = func() time.Time {
		now = now.Add(time.Second)
		return now
	}
	t.Cleanup(func() { progressClock = old })
}

func TestProgressLine(t *testing.T) {
	p := &progress{width: 80, total: 1000, items: 2_500_000, prefix: "build"}
	got := p.line(250, 2*time.Second)
	// A quarter of a 36-column bar, and one column spare so the
	// terminal never wraps.
	want := "build [" + strings.Repeat("=", 9) + strings.Repeat(" ", 27) + "]  25%  2.5M items  1.2M/s  ETA 0:06"
	if got != want || len(got) != p.width-1 {
		t.Errorf("line =\n%q, want\n%q", got, want)
	}

	// Narrow terminals get the numbers without the bar.
	p.width = 40
	if got := p.line(1000, time.Hour+2*time.Minute); got != "build 100%  2.5M items  672/s  ETA 0:00" {
		t.Errorf("narrow line = %q", got)
	}
	// Nothing read yet: no estimate.
	p.items = 0
	if got := p.line(0, 0); !strings.HasSuffix(got, "ETA --:--") {
		t.Errorf("line at the start = %q", got)
	}
}

func TestProgressDraws(t *testing.T) {
	slowClock(t)
	old := terminalWidth
	defer func() { terminalWidth = old }()

	var w bytes.Buffer
	terminalWidth = func(io.Writer) (int, bool) { return 60, false }
	if p := newProgress(&w, "build", 100); p != nil {
		t.Fatal("a progress bar for a writer that is not a terminal")
	}
	terminalWidth = func(io.Writer) (int, bool) { return 60, true }
	if p := newProgress(&w, "build", -1); p != nil {
		t.Fatal("a progress bar for an input of unknown size")
	}
	var none *progress
	none.update(1, 1) // a nil bar draws nothing, without panicking
	none.finish()

	p := newProgress(&w, "build", 100)
	p.update(10, 50)
	p.update(10, 100)
	p.finish()
	out := w.String()
	if strings.Count(out, "\r") != 3 || !strings.Contains(out, " 50%") || !strings.Contains(out, "100%") ||
		!strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("drawn %q", out)
	}
}

func TestShortCountAndClock(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 950: "950", 12_345: "12.3k", 4_560_000: "4.6M", 7e9: "7.0G", 2e12: "2.0T"} {
		if got := shortCount(v); got != want {
			t.Errorf("shortCount(%v) = %q, want %q", v, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0:00", 59 * time.Second: "0:59", 61 * time.Second: "1:01",
		3*time.Hour + 4*time.Minute + 5*time.Second: "3:04:05"} {
		if got := formatClock(d); got != want {
			t.Errorf("formatClock(%v) = %q, want %q", d, got, want)
		}
	}
}
