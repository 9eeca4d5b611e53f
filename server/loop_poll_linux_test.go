package server

import (
	"bytes"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestBusyPollTurned: a loop polls before sleeping (hot) after a window
// in which its turns took at least half the time, and stops after one in
// which they took less; with no limit it never does.
func TestBusyPollTurned(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	// A turn is [start, end) in milliseconds since t0.
	type turn struct{ start, end float64 }
	for _, tc := range []struct {
		name  string
		limit time.Duration
		turns []turn
		hot   bool
	}{
		{"no turns", DefaultBusyPoll, nil, false},
		{"window not over", DefaultBusyPoll, []turn{{0, 9}}, false},
		{"busy window", DefaultBusyPoll, []turn{{0, 4}, {4.5, 10}}, true},
		{"half busy", DefaultBusyPoll, []turn{{0, 2.5}, {7.5, 10}}, true},
		{"under half", DefaultBusyPoll, []turn{{0, 2}, {7.5, 10}}, false},
		{"idle after busy", DefaultBusyPoll, []turn{{0, 10}, {30, 30.1}}, false},
		{"busy after idle", DefaultBusyPoll, []turn{{0, 0.1}, {40, 41}, {41.1, 51.1}}, true},
		{"busy window not over after idle", DefaultBusyPoll, []turn{{0, 0.1}, {40, 41}, {41.1, 50.1}}, false},
		{"long sleep, one short turn", DefaultBusyPoll, []turn{{1000, 1000.05}}, false},
		{"off", -1, []turn{{0, 10}, {10, 20}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := busyPoll{limit: tc.limit, start: t0}
			for _, tr := range tc.turns {
				p.turned(t0.Add(ms(tr.start)), t0.Add(ms(tr.end)))
			}
			if p.hot != tc.hot {
				t.Fatalf("hot = %v, want %v (busy %v since %v)", p.hot, tc.hot, p.busy, p.start.Sub(t0))
			}
		})
	}
}

// blockingTestLoop is a blocking event loop of a started server, not
// running: the tests call its methods; it ends with the test.
func blockingTestLoop(t *testing.T) (*eventLoop, *statShard) {
	onePath(t)
	srv, _ := startServer(t, Config{})
	shard := &statShard{}
	l, err := newEventLoop(srv, shard, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.end)
	return l, shard
}

// TestBusyPollSpin: a hot loop's spin returns the events a poll finds,
// counting those found after an empty poll as a sleep saved, and gives up
// after its limit; a loop that is not hot does not poll at all.
func TestBusyPollSpin(t *testing.T) {
	l, shard := blockingTestLoop(t)
	limit := 2 * time.Millisecond
	p := busyPoll{limit: limit, shard: shard}

	begin := time.Now()
	if n := p.spin(l); n != 0 || time.Since(begin) >= limit {
		t.Fatalf("cold spin: %d events after %v; want 0 at once", n, time.Since(begin))
	}
	p.hot = true
	begin = time.Now()
	p.ended = begin // as turned leaves it at the end of a turn
	if n := p.spin(l); n != 0 || time.Since(begin) < limit {
		t.Fatalf("hot spin with nothing ready: %d events after %v; want 0 after %v", n, time.Since(begin), limit)
	}
	if polled := time.Duration(shard.pollNanos.Load()); polled < limit {
		t.Fatalf("a spin that gave up after %v counted %v of polling", limit, polled)
	}
	l.wake() // the eventfd is ready before the spin: its first poll finds it
	if n := p.spin(l); n != 1 || shard.busyPolls.Load() != 0 {
		t.Fatalf("spin with an event ready: %d events, %d sleeps saved; want 1, 0", n, shard.busyPolls.Load())
	}
	l.takeInbox()
	p.limit, p.ended = 5*time.Second, time.Now()
	go func() {
		time.Sleep(time.Millisecond)
		l.wake()
	}()
	if n := p.spin(l); n != 1 || shard.busyPolls.Load() != 1 {
		t.Fatalf("spin while an event comes: %d events, %d sleeps saved; want 1, 1", n, shard.busyPolls.Load())
	}
	before := shard.pollNanos.Load()
	p.turned(time.Now(), time.Now()) // the turn after counts the polling that found its events
	if polled := time.Duration(shard.pollNanos.Load() - before); polled < time.Millisecond {
		t.Fatalf("a spin that found an event after 1 ms counted %v of polling", polled)
	}
}

// TestBusyPollNapsBackOff: a hot loop naps instead of spinning unless
// its naps starved the clients (at least three quarters of the last
// window's active connections had input after the nap) in more than a
// quarter of a window's naps: then it spins for 1, 3, 7, … windows. A
// window whose naps did not starve them ends the back-off; a loop that
// is not hot, or has no nap, never naps.
func TestBusyPollNapsBackOff(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := busyPoll{limit: DefaultBusyPoll, nap: DefaultPollNap, start: t0}
	now := t0
	// window ends a fully busy window (or an idle one: busy false) in
	// which active connections sent input and the loop napped naps times,
	// starving the clients starved times; it reports whether the loop
	// naps in the next.
	window := func(busy bool, active, naps, starved int) bool {
		p.naps, p.starved = naps, starved
		for range active {
			p.noteInput(p.start.Add(-time.Nanosecond))
		}
		p.noteInput(p.start) // read again in the window: not counted twice
		from := now
		now = now.Add(busyWindow)
		if !busy {
			from = now.Add(-time.Microsecond)
		}
		p.turned(from, now)
		return p.napping
	}
	if !window(true, 50, 0, 0) || p.lastActive != 50 || p.active != 0 {
		t.Fatalf("a busy window of 50 clients: napping %v, last window's active %d, active %d; want true, 50, 0",
			p.napping, p.lastActive, p.active)
	}
	if window(false, 50, 0, 0) {
		t.Fatal("an idle window: napping")
	}
	for _, length := range []int{1, 3, 7, 15, 31, 63, 63} {
		if window(true, 5, 8, 3) { // 3 of 8 naps starved the clients
			t.Fatalf("after naps that starved the clients: napping; want a back-off of %d windows", length)
		}
		for i := 1; i < length; i++ {
			if window(true, 5, 0, 0) {
				t.Fatalf("back-off of %d windows: napping after %d", length, i)
			}
		}
		if !window(true, 5, 0, 0) {
			t.Fatalf("back-off of %d windows: still spinning after it", length)
		}
	}
	if !window(true, 50, 8, 2) { // a quarter starved: no back-off
		t.Fatal("naps of which a quarter starved the clients: spinning")
	}
	if window(true, 5, 1, 1) || !window(true, 5, 0, 0) { // the back-off starts again from 1 window
		t.Fatal("the back-off did not start again from 1 window after naps that did not starve")
	}
	p.nap = 0
	if window(true, 50, 0, 0) {
		t.Fatal("no nap: napping")
	}
}

// TestBusyPollNapOnce: a napping loop's spin sleeps once and polls: 0
// when nothing came (a nap, no polling counted), the events when some
// came during the nap (a sleep saved), which starved the clients when
// they are three quarters of the last window's active connections. A
// loop with connections off it neither naps nor spins.
func TestBusyPollNapOnce(t *testing.T) {
	l, shard := blockingTestLoop(t)
	// A signal (the runtime's preemption, the race detector's) may cut a
	// nap short, so its length is not checked, only that the loop napped.
	p := busyPoll{limit: time.Millisecond, nap: 5 * time.Millisecond, hot: true, napping: true, lastActive: 1, shard: shard}
	p.ended = time.Now()
	if n := p.spin(l); n != 0 {
		t.Fatalf("a nap with nothing ready: %d events; want 0", n)
	}
	if p.naps != 1 || shard.pollNaps.Load() != 1 || shard.busyPolls.Load() != 0 || shard.pollNanos.Load() != 0 {
		t.Fatalf("after a nap that found nothing: naps %d, pollNaps %d, busyPolls %d, pollNanos %d; want 1, 1, 0, 0",
			p.naps, shard.pollNaps.Load(), shard.busyPolls.Load(), shard.pollNanos.Load())
	}
	// An event that comes during the nap: written before napOnce, which
	// polls only after it.
	l.wake()
	if n := p.napOnce(l); n != 1 || shard.busyPolls.Load() != 1 || p.starved != 1 {
		t.Fatalf("a nap while an event came: %d events, busyPolls %d, starved %d; want 1, 1, 1", n, shard.busyPolls.Load(), p.starved)
	}
	l.takeInbox()
	p.lastActive = 50 // one of fifty clients waiting: not starved
	l.wake()
	if n := p.napOnce(l); n != 1 || p.starved != 1 || p.naps != 3 {
		t.Fatalf("a nap with one of 50 clients waiting: %d events, starved %d, naps %d; want 1, 1, 3", n, p.starved, p.naps)
	}
	l.takeInbox()
	l.away = 1 // a connection off the loop: its goroutine needs the CPU, and a nap would not see its return
	tries := p.tries
	p.ended = time.Now()
	if n := p.spin(l); n != 0 || p.naps != 3 || p.tries != tries || shard.pollNanos.Load() != 0 {
		t.Fatalf("with a connection off the loop: %d events, naps %d, tries %d (from %d), pollNanos %d; want 0, 3, no try, 0",
			n, p.naps, p.tries, tries, shard.pollNanos.Load())
	}
	p.napping = false // nor does it spin
	if n := p.spin(l); n != 0 || p.tries != tries || shard.pollNanos.Load() != 0 {
		t.Fatalf("spinning with a connection off the loop: %d events, tries %d (from %d), pollNanos %d; want 0, no try, 0",
			n, p.tries, tries, shard.pollNanos.Load())
	}
}

// TestBusyPollBacksOff: a window whose polls found input in fewer than
// a quarter of the tries (the turns waited rather than worked) stops the
// polling for 1, then 3, 7, … windows, however busy the loop looks; a
// window whose polls paid ends the back-off.
func TestBusyPollBacksOff(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := busyPoll{limit: DefaultBusyPoll, start: t0}
	now := t0
	// window ends a fully busy window in which the loop polled tries
	// times, saved of them finding input, and reports whether the loop
	// polls in the next.
	window := func(tries, saved int) bool {
		p.tries, p.saved = tries, saved
		now = now.Add(busyWindow)
		p.turned(now.Add(-busyWindow), now)
		return p.hot
	}
	if !window(0, 0) {
		t.Fatal("a busy window without polls: not hot")
	}
	for _, length := range []int{1, 3, 7, 15, 31, 63, 63} {
		if window(8, 1) { // polled in vain: 1 of 8
			t.Fatalf("after polls that did not pay: hot; want a back-off of %d windows", length)
		}
		for i := 1; i < length; i++ {
			if window(0, 0) {
				t.Fatalf("back-off of %d windows: hot after %d", length, i)
			}
		}
		if !window(0, 0) {
			t.Fatalf("back-off of %d windows: still cold after it", length)
		}
	}
	if !window(4, 1) || !window(0, 0) { // a quarter paid: no back-off
		t.Fatal("polls of which a quarter paid: cold")
	}
	if window(2, 0) {
		t.Fatal("polled in vain after they paid: hot")
	}
	if !window(0, 0) { // the back-off was reset by the window that paid: 1 window
		t.Fatal("the back-off did not start again from 1 window after polls that paid")
	}
}

// TestBusyPollEngages: with a server's one loop kept busy by pipelines
// of PINGs, the loop polls and finds the next pipeline without sleeping
// (INFO busy_poll_wakeups grows); with BusyPoll off it never does. A
// client that sends a command every 2 ms (so that no poll can find it)
// costs at most a few windows of polling: none when the loop is idle
// between commands, and a back-off when slow fsyncs (appendfsync always)
// make its turns look busy.
func TestBusyPollEngages(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("with one processor the loops park in Go's scheduler and do not poll")
	}
	onePath(t)
	const pipeline = 1000
	batch := bytes.Repeat([]byte("*1\r\n$4\r\nPING\r\n"), pipeline)
	want := pipeline * len("+PONG\r\n")
	stat := func(ps *pServer, name string) int {
		v := ps.infoSection(t, "stats")[name]
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("INFO stats: %s is %q", name, v)
		}
		return n
	}
	wakeups := func(ps *pServer) int { return stat(ps, "busy_poll_wakeups") }
	// load sends pipelines on c until ps's loop has saved a sleep or for d.
	load := func(ps *pServer, c *rawConn, d time.Duration) int {
		buf := make([]byte, want)
		for end := time.Now().Add(d); time.Now().Before(end); {
			c.nc.SetDeadline(time.Now().Add(rawTimeout))
			if _, err := c.nc.Write(batch); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c.nc, buf); err != nil {
				t.Fatal(err)
			}
			if n := wakeups(ps); n > 0 {
				return n
			}
		}
		return wakeups(ps)
	}
	// start starts a server of one loop, skipping the test unless the
	// loop blocks in epoll_wait (only such a loop polls).
	start := func(t *testing.T, cfg Config) (*pServer, *rawConn) {
		cfg.EventLoops = 1
		ps := startPServer(t, cfg)
		c := dialRaw(t, ps.addr)
		c.do("PING") // the loops run
		ps.srv.mu.Lock()
		block := len(ps.srv.loops) == 1 && ps.srv.loops[0].block
		ps.srv.mu.Unlock()
		if !block {
			t.Skip("the loop does not block in epoll_wait (another server in the process holds the processors)")
		}
		return ps, c
	}
	for _, tc := range []struct {
		name     string
		busyPoll time.Duration
		polls    bool
	}{{"on", MaxBusyPoll, true}, {"off", -1, false}} { // "on" at the longest limit: under the race detector the client answers slower than the default
		t.Run(tc.name, func(t *testing.T) {
			ps, c := start(t, Config{Dir: "-", BusyPoll: tc.busyPoll, PollNap: -1})
			d := 2 * time.Second
			if tc.polls {
				d = 20 * time.Second // until it polls
			}
			if n := load(ps, c, d); (n > 0) != tc.polls {
				t.Fatalf("busy_poll_wakeups after pipelined load: %d; want polls: %v", n, tc.polls)
			}
			if us := stat(ps, "busy_poll_us"); (us > 0) != tc.polls {
				t.Fatalf("busy_poll_us after pipelined load: %d; want polls: %v", us, tc.polls)
			}
			if naps := stat(ps, "busy_poll_naps"); naps != 0 {
				t.Fatalf("busy_poll_naps with PollNap off: %d", naps)
			}
		})
	}
	// With naps (the default), the first busy window naps: the client
	// then waits on the loop after every nap, which stops the napping for
	// a while, but the naps taken are counted.
	t.Run("naps", func(t *testing.T) {
		ps, c := start(t, Config{Dir: "-", BusyPoll: MaxBusyPoll})
		buf := make([]byte, want)
		for end := time.Now().Add(20 * time.Second); stat(ps, "busy_poll_naps") == 0; {
			if time.Now().After(end) {
				t.Fatal("busy_poll_naps still 0 after 20 s of pipelined load")
			}
			c.nc.SetDeadline(time.Now().Add(rawTimeout))
			if _, err := c.nc.Write(batch); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c.nc, buf); err != nil {
				t.Fatal(err)
			}
		}
	})
	// trickle sends n commands cmd(i) 2 ms apart and checks that at most
	// two polls found one (none could, but for a stall of the server
	// under load that lines a poll up with the next command: make test
	// runs packages side by side on two cores, and one such wake-up made
	// it fail) and that the polling took at most 40 polls' limit (a loop
	// polling after every turn takes n).
	trickle := func(t *testing.T, ps *pServer, c *rawConn, n int, cmd func(i int) []string) {
		for i := range n {
			c.do(cmd(i)...)
			time.Sleep(2 * time.Millisecond)
		}
		w, us := wakeups(ps), stat(ps, "busy_poll_us")
		t.Logf("%d commands 2 ms apart: busy_poll_wakeups %d, busy_poll_us %d", n, w, us)
		if w > 2 || time.Duration(us)*time.Microsecond > 40*DefaultBusyPoll {
			t.Fatalf("after %d commands 2 ms apart: busy_poll_wakeups %d, busy_poll_us %d; want at most 2 and %d",
				n, w, us, 40*DefaultBusyPoll/time.Microsecond)
		}
	}
	t.Run("trickle", func(t *testing.T) {
		ps, c := start(t, Config{Dir: "-"})
		trickle(t, ps, c, 60, func(int) []string { return []string{"PING"} })
	})
	t.Run("trickle with slow fsyncs", func(t *testing.T) {
		ps, c := start(t, Config{Dir: t.TempDir(), AppendFsync: "always"})
		p := ps.srv.persist
		p.wmu.Lock()
		p.file = &slowSyncFile{aofFile: p.file, delay: 3 * time.Millisecond}
		p.wmu.Unlock()
		before := p.fsyncs.Load()
		// Each BF.ADD of a new item is an fsync: its turn waits 3 ms of
		// every 5, more than half.
		trickle(t, ps, c, 150, func(i int) []string { return []string{"BF.ADD", "k", strconv.Itoa(i)} })
		if n := p.fsyncs.Load() - before; n < 150 {
			t.Fatalf("%d fsyncs for 150 adds", n)
		}
	})
}

// slowSyncFile is an aofFile on a slow disk: each fsync takes delay.
type slowSyncFile struct {
	aofFile
	delay time.Duration
}

func (f *slowSyncFile) Sync() error {
	time.Sleep(f.delay)
	return f.aofFile.Sync()
}
