package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// countedAddRuns counts a store's AddRun calls.
type countedAddRuns struct {
	bloomStore
	calls *atomic.Int64
}

func (s countedAddRuns) AddRun(ctx context.Context, key string, ops []*batchOp) {
	s.calls.Add(1)
	s.bloomStore.(addRunStore).AddRun(ctx, key, ops)
}

// TestAddRunsForm: on the memory backend with a log, served by an event
// loop or by a goroutine, 200 pipelined BF.ADDs on one key take a few
// AddRun calls, and answer as they would alone.
func TestAddRunsForm(t *testing.T) {
	onePath(t) // both paths below
	for _, cfg := range []Config{{AppendFsync: "always"}, {GoroutinePerConn: true}} {
		cfg.Dir = t.TempDir()
		var runs atomic.Int64
		_, addr := startServerTuned(t, cfg, func(s *Server) { s.bloom = countedAddRuns{s.bloom, &runs} })
		c := dialRaw(t, addr)
		var sent strings.Builder
		for i := range 200 {
			sent.WriteString(encodeCommand("BF.ADD", "k", "i"+strconv.Itoa(i%150)))
		}
		c.send(sent.String())
		for i := range 200 {
			if got, want := c.reply(), rawInt(map[bool]int64{true: 1}[i < 150]); got != want {
				t.Fatalf("GoroutinePerConn %v, BF.ADD %d: %q, want %q", cfg.GoroutinePerConn, i, got, want)
			}
		}
		if n := runs.Load(); n < 1 || n > 8 {
			t.Errorf("GoroutinePerConn %v: 200 pipelined BF.ADDs took %d AddRun calls, want 1 to 8", cfg.GoroutinePerConn, n)
		}
	}
}

// addRunCommands are adds on keys under prefix: a non-scaling filter
// filled past full (single adds and BF.MADDs, some of which stop at
// the full filter), a scaling one that grows several times, and a key
// that the first add creates; with repeated items.
func addRunCommands(prefix string) [][]string {
	var cmds [][]string
	for i := range 100 {
		cmds = append(cmds, []string{"BF.ADD", prefix + "full", "f" + strconv.Itoa(i%70)})
	}
	for i := range 20 {
		cmds = append(cmds, []string{"BF.MADD", prefix + "full", "m" + strconv.Itoa(i), "f1", "m" + strconv.Itoa(i+50)})
	}
	for i := range 300 {
		cmds = append(cmds, []string{"BF.ADD", prefix + "grow", "g" + strconv.Itoa(i%260)})
	}
	for i := range 30 {
		cmds = append(cmds, []string{"BF.MADD", prefix + "grow", "h" + strconv.Itoa(i), "g3", "h" + strconv.Itoa(i*7), "h" + strconv.Itoa(i+1), "x"})
	}
	for i := range 50 {
		cmds = append(cmds, []string{"BF.ADD", prefix + "new", "n" + strconv.Itoa(i%40)})
	}
	return cmds
}

// TestAddRunsJournal: pipelined adds on a server with a log (runs: every
// stop and growth of addRunCommands inside them) answer byte for byte as
// the same commands sent one at a time on other keys; and a server that
// replays the log, from a copy of the directory taken while the first
// runs (as a crash leaves it), has each pipelined key with the same bits
// and counts as its one-at-a-time twin.
func TestAddRunsJournal(t *testing.T) {
	onePath(t) // both paths below
	for _, goroutines := range []bool{false, true} {
		ps := startPServer(t, Config{Dir: t.TempDir(), AppendFsync: "always", GoroutinePerConn: goroutines})
		for _, prefix := range []string{"p:", "a:"} {
			ps.do(t, "BF.RESERVE", prefix+"full", "0.01", "40", "NONSCALING")
			ps.do(t, "BF.RESERVE", prefix+"grow", "0.01", "30", "EXPANSION", "2")
		}
		label := fmt.Sprintf("goroutines %v", goroutines)
		replies := pipedMatchesAlone(t, ps, addRunCommands, label)
		full := 0
		for reply, n := range replies {
			if strings.Contains(reply, "full") {
				full += n
			}
		}
		if full == 0 {
			t.Fatal("no add met the full filter: the test missed the stops")
		}
		replayMatches(t, ps, "BF.SCANDUMP", "BF.INFO", []string{"full", "grow", "new"}, label)
	}
}

// pipedMatchesAlone sends the commands cmds("p:") pipelined on one
// connection of ps and cmds("a:") one at a time on another, fails the
// test at the first reply that differs, and returns how often each
// reply came.
func pipedMatchesAlone(t *testing.T, ps *pServer, cmds func(prefix string) [][]string, label string) map[string]int {
	t.Helper()
	piped, alone := dialRaw(t, ps.addr), dialRaw(t, ps.addr)
	var sent strings.Builder
	for _, args := range cmds("p:") {
		sent.WriteString(encodeCommand(args...))
	}
	piped.send(sent.String())
	var got []string
	for range cmds("p:") {
		got = append(got, piped.reply())
	}
	counts := map[string]int{}
	for i, args := range cmds("a:") {
		want := alone.do(args...)
		if got[i] != want {
			t.Fatalf("%s, command %d %q: pipelined %q, alone %q", label, i, args, got[i], want)
		}
		counts[want]++
	}
	return counts
}

// replayMatches starts a server on a copy of ps's directory taken now,
// while ps runs (as a crash leaves it), and checks that each of keys
// under "p:" has, after replay, the dump (dumpVerb) and info (infoVerb)
// of its twin under "a:", and the info it had before.
func replayMatches(t *testing.T, ps *pServer, dumpVerb, infoVerb string, keys []string, label string) {
	t.Helper()
	re := startPServer(t, Config{Dir: copyDataDir(t, ps.dir)})
	defer re.shutdown(t)
	for _, key := range keys {
		p, a := scanDump(t, re, dumpVerb, "p:"+key), scanDump(t, re, dumpVerb, "a:"+key)
		if p != a || len(p) == 0 {
			t.Fatalf("%s, after replay: p:%s's dump (%d bytes) differs from a:%s's (%d)", label, key, len(p), key, len(a))
		}
		pi, ai := fmt.Sprint(re.do(t, infoVerb, "p:"+key)), fmt.Sprint(re.do(t, infoVerb, "a:"+key))
		if pi != ai {
			t.Fatalf("%s, after replay: %s p:%s %s, a:%s %s", label, infoVerb, key, pi, key, ai)
		}
		if live := fmt.Sprint(ps.do(t, infoVerb, "p:"+key)); live != pi {
			t.Fatalf("%s: %s p:%s %s before the crash, %s after", label, infoVerb, key, live, pi)
		}
	}
}
