package server

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
)

// countedCFAddRuns counts a cuckoo store's CFAddRun calls.
type countedCFAddRuns struct {
	cuckooStore
	calls *atomic.Int64
}

func (s countedCFAddRuns) CFAddRun(ctx context.Context, key string, ops []*batchOp) {
	s.calls.Add(1)
	s.cuckooStore.(cuckooAddRunStore).CFAddRun(ctx, key, ops)
}

// cfAddRunCommands are cuckoo adds on keys under prefix: a filter that
// cannot grow, filled until "Filter is full"; one that grows by small
// sub-filters until "Maximum expansions reached" (within runs, so that
// runs are cut at the limit); and a key the first CF.ADD creates; CF.ADD
// and CF.ADDNX mixed, with repeated items.
func cfAddRunCommands(prefix string) [][]string {
	var cmds [][]string
	verb := func(i int) string { return map[bool]string{true: "CF.ADDNX", false: "CF.ADD"}[i%5 == 3] }
	for i := range 40 {
		cmds = append(cmds, []string{verb(i), prefix + "full", "f" + strconv.Itoa(i%30)})
	}
	for i := range 200 {
		cmds = append(cmds, []string{verb(i), prefix + "grow", "g" + strconv.Itoa(i%170)})
	}
	for i := range 60 {
		cmds = append(cmds, []string{verb(i), prefix + "new", "n" + strconv.Itoa(i%45)})
	}
	return cmds
}

// TestCFAddRuns: pipelined CF.ADDs and CF.ADDNXs on a server with a log,
// served by an event loop or by a goroutine, take a few CFAddRun calls and
// answer byte for byte as the same commands sent one at a time on other
// keys, through "Filter is full" and "Maximum expansions reached"; and a
// server that replays the log, from a copy of the directory taken while
// the first runs (as a crash leaves it), has each pipelined key with the
// same dump and CF.INFO as its one-at-a-time twin.
func TestCFAddRuns(t *testing.T) {
	onePath(t) // both paths below
	for _, goroutines := range []bool{false, true} {
		var runs atomic.Int64
		cfg := Config{Dir: t.TempDir(), AppendFsync: "always", GoroutinePerConn: goroutines}
		ps := startPServer(t, cfg, func(s *Server) { s.cuckoo = countedCFAddRuns{s.cuckoo, &runs} })
		for _, prefix := range []string{"p:", "a:"} {
			ps.do(t, "CF.RESERVE", prefix+"full", "16", "BUCKETSIZE", "2", "EXPANSION", "0")
			ps.do(t, "CF.RESERVE", prefix+"grow", "4", "BUCKETSIZE", "1", "MAXITERATIONS", "5", "EXPANSION", "1")
		}
		label := fmt.Sprintf("goroutines %v", goroutines)
		counts := pipedMatchesAlone(t, ps, cfAddRunCommands, label)
		for _, want := range []string{rawInt(1), rawInt(0), "-" + string(errCFFull) + "\r\n", "-" + string(errMaxExpansions) + "\r\n"} {
			if counts[want] == 0 {
				t.Fatalf("%s: no reply %q among %v: the test missed a case", label, want, counts)
			}
		}
		if n := runs.Load(); n < 1 || n > 30 {
			t.Errorf("%s: %d pipelined commands took %d CFAddRun calls, want 1 to 30", label, len(cfAddRunCommands("")), n)
		}
		replayMatches(t, ps, "CF.SCANDUMP", "CF.INFO", []string{"full", "grow", "new"}, label)
	}
}
