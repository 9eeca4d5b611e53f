package server

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/resp"
)

// Runs (conn_run.go) must be invisible but for speed: a pipeline answers
// byte for byte as the same commands sent one at a time, counts each
// command, and tracks the keys it reads.

// runCommand is a random command for TestRunsSameAsAlone, on keys under
// prefix: mostly tests and adds of Bloom and cuckoo filters on a few
// keys (so that runs form, and break on another key, another kind, a
// write), in mixed case, with wrong arity, wrong types, transactions.
func runCommand(rng *rand.Rand, prefix string) [][]string {
	item := func() string { return "x" + strconv.Itoa(rng.IntN(80)) }
	bf := prefix + []string{"b", "b", "b", "b2", "c"}[rng.IntN(5)] // c: a cuckoo filter
	cf := prefix + []string{"c", "c", "c", "c2", "b"}[rng.IntN(5)]
	one := func(args ...string) [][]string { return [][]string{args} }
	switch rng.IntN(20) {
	case 0, 1, 2:
		return one("BF.EXISTS", bf, item())
	case 3:
		return one("bf.exists", bf, item())
	case 4:
		return one("BF.MEXISTS", bf, item(), item(), item())
	case 5, 6, 7:
		return one("CF.EXISTS", cf, item())
	case 8:
		return one("Cf.Exists", cf, item())
	case 9:
		return one("CF.MEXISTS", cf, item(), item())
	case 10, 11:
		return one("BF.ADD", bf, item())
	case 12:
		return one("BF.MADD", bf, item(), item())
	case 13:
		return one("CF.ADD", cf, item())
	case 14:
		return one("CF.DEL", cf, item())
	case 15:
		i := rng.IntN(4)
		return [][]string{{"BF.EXISTS", bf}, {"CF.EXISTS", cf, "a", "b"}, {"BF.MEXISTS", bf}, {"NOSUCH", bf}}[i : i+1]
	case 16:
		return [][]string{{"MULTI"}, {"BF.EXISTS", bf, item()}, {"CF.EXISTS", cf, item()}, {"BF.EXISTS", bf, item()}, {"EXEC"}}
	case 17:
		return one("DEL", []string{bf, cf}[rng.IntN(2)])
	case 18:
		return one("PING")
	}
	return one("BF.EXISTS", prefix+"missing", item())
}

// bigRunCommands are runs of BF.MEXISTS and CF.MEXISTS of 200 items
// each, alternating keys, broken by runs of single tests: about 150 KiB
// of replies, after one large command.
func bigRunCommands(rng *rand.Rand) [][][]string {
	// First a command of 1 MiB: the event loop's input buffer grows to
	// hold it, and later reads may take more than 64 KiB of commands at
	// once, whose replies end the connection's turn with a run pending.
	cmds := [][][]string{{{"BF.EXISTS", "b", strings.Repeat("y", 1<<20)}}}
	for g := range 60 {
		verb, key := "BF.MEXISTS", []string{"b", "b2"}[g%2]
		if g%3 == 2 {
			verb, key = "CF.MEXISTS", "c"
		}
		for range 3 {
			args := []string{verb, key}
			for range 200 {
				args = append(args, "x"+strconv.Itoa(rng.IntN(80)))
			}
			cmds = append(cmds, [][]string{args})
		}
		for range 5 {
			cmds = append(cmds, [][]string{{"BF.EXISTS", key, "x" + strconv.Itoa(rng.IntN(80))}})
		}
	}
	return cmds
}

// TestRunsSameAsAlone: random pipelines (some long enough to arrive in
// several reads, so that runs meet the end of the input) answer byte for
// byte as the same commands sent one at a time and each reply read
// before the next command, in RESP2 and RESP3, on every kind of server;
// and every command is counted once, as a call (and an error when it is
// one).
func TestRunsSameAsAlone(t *testing.T) {
	for name, start := range serverKinds(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, addr := start(t)
			for _, proto := range []string{"2", "3"} {
				piped, alone := dialRaw(t, addr), dialRaw(t, addr)
				for _, c := range []*rawConn{piped, alone} {
					c.do("HELLO", proto)
				}
				rng := rand.New(rand.NewPCG(21, uint64(len(proto))))
				for round := range 40 {
					n := 1 + rng.IntN(60)
					if round%10 == 9 {
						n = 3000 // more than one read of the server's
					}
					var cmds [][][]string
					for range n {
						cmds = append(cmds, runCommand(rng, ""))
					}
					if round%10 == 4 { // over 64 KiB of replies: turns of the event loop end between runs
						cmds = bigRunCommands(rng)
					}
					before := commandCounts(srv)
					var sent strings.Builder
					for _, group := range cmds {
						for _, args := range group {
							sent.WriteString(encodeCommand(prefixed(args, "p:")...))
						}
					}
					piped.send(sent.String())
					var got []string
					for _, group := range cmds {
						for range group {
							got = append(got, piped.reply())
						}
					}
					mid := commandCounts(srv)
					i := 0
					for _, group := range cmds {
						for _, args := range group {
							if want := alone.do(prefixed(args, "a:")...); got[i] != want {
								t.Fatalf("RESP%s round %d, command %d %q: pipelined %q, alone %q", proto, round, i, args, got[i], want)
							}
							i++
						}
					}
					after := commandCounts(srv)
					for name, c := range after {
						if piped, alone := mid[name].sub(before[name]), c.sub(mid[name]); piped != alone {
							t.Fatalf("RESP%s round %d: %s counted %+v pipelined, %+v alone", proto, round, name, piped, alone)
						}
					}
				}
			}
		})
	}
}

// prefixed returns args with prefix before the key of the filter
// commands and DEL (the second argument), so that two clients' commands
// touch separate keys; the replies do not name keys.
func prefixed(args []string, prefix string) []string {
	out := append([]string(nil), args...)
	if len(out) > 1 && (strings.Contains(out[0], ".") || strings.EqualFold(out[0], "DEL")) {
		out[1] = prefix + out[1]
	}
	return out
}

// counts are a command's counters: calls, errors, timed executions.
type counts struct{ calls, errors, timed uint64 }

func (c counts) sub(o counts) counts {
	return counts{c.calls - o.calls, c.errors - o.errors, c.timed - o.timed}
}

// commandCounts sums srv's per-command counters over its shards.
func commandCounts(srv *Server) map[string]counts {
	out := map[string]counts{}
	for _, cmd := range srv.metrics.cmds {
		var c counts
		for _, sh := range srv.metrics.shards {
			n := &sh.cmds[cmd.idx]
			c.calls += n.calls.Load()
			c.errors += n.errors.Load()
			for i := range n.timed {
				c.timed += n.timed[i].Load()
			}
		}
		out[cmd.name] = c
	}
	return out
}

// TestRunTracksItsKeys: the keys a pipelined run of tests read are
// tracked as each command alone would track them: another client's
// write brings the invalidation.
func TestRunTracksItsKeys(t *testing.T) {
	for name, start := range serverKinds(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, addr := start(t)
			reader, writer := resp3(t, addr), dialRaw(t, addr)
			reader.do("CLIENT", "TRACKING", "ON")
			writer.do("CF.RESERVE", "cf", "100")
			var sent strings.Builder
			for _, args := range [][]string{
				{"BF.EXISTS", "bf", "a"}, {"BF.EXISTS", "bf", "b"}, {"BF.MEXISTS", "bf", "c", "d"},
				{"CF.EXISTS", "cf", "a"}, {"CF.MEXISTS", "cf", "b", "c"}, {"CF.EXISTS", "cf", "d"},
			} {
				sent.WriteString(encodeCommand(args...))
			}
			reader.send(sent.String())
			for range 6 {
				reader.reply()
			}
			for _, key := range []string{"bf", "cf"} {
				add := "BF.ADD"
				if key == "cf" {
					add = "CF.ADD"
				}
				writer.do(add, key, "x")
				if got := reader.reply(); got != invalidation(key) {
					t.Fatalf("after %s %s: %q, want its invalidation", add, key, got)
				}
			}
		})
	}
}

// TestRunOnExpiredKey: a pipelined run of tests on a key whose time has
// passed finds nothing, as a lone test would, and the key is gone.
func TestRunOnExpiredKey(t *testing.T) {
	for _, cfg := range []Config{{}, {GoroutinePerConn: true}} {
		_, addr := startServer(t, cfg)
		c := dialRaw(t, addr)
		c.do("BF.MADD", "b", "x", "y")
		c.do("CF.ADD", "c", "x")
		c.do("PEXPIRE", "b", "1")
		c.do("PEXPIRE", "c", "1")
		time.Sleep(20 * time.Millisecond)
		c.send(strings.Repeat(encodeCommand("BF.EXISTS", "b", "x"), 3) + encodeCommand("BF.MEXISTS", "b", "x", "y") +
			strings.Repeat(encodeCommand("CF.EXISTS", "c", "x"), 3))
		want := []string{rawInt(0), rawInt(0), rawInt(0), rawArray(rawInt(0), rawInt(0)), rawInt(0), rawInt(0), rawInt(0)}
		for i, w := range want {
			if got := c.reply(); got != w {
				t.Fatalf("GoroutinePerConn %v, reply %d: %q, want %q", cfg.GoroutinePerConn, i, got, w)
			}
		}
		if got := c.do("EXISTS", "b", "c"); got != rawInt(0) {
			t.Fatalf("EXISTS b c after the runs: %q", got)
		}
	}
}

// countedBloom and countedCuckoo count the calls to their store's Exists.
type countedBloom struct {
	bloomStore
	calls *atomic.Int64
}

func (s countedBloom) Exists(ctx context.Context, key string, items [][]byte, found []bool) error {
	s.calls.Add(1)
	return s.bloomStore.Exists(ctx, key, items, found)
}

type countedCuckoo struct {
	cuckooStore
	calls *atomic.Int64
}

func (s countedCuckoo) Exists(ctx context.Context, key string, items [][]byte, found []bool) error {
	s.calls.Add(1)
	return s.cuckooStore.Exists(ctx, key, items, found)
}

// TestRunsForm: on the memory backend, served by an event loop or by
// goroutines, 200 pipelined BF.EXISTS on one filter (then 200 CF.EXISTS)
// reach the store in a handful of calls, not 200, and answer in order;
// a run stops at maxRun commands and at batchItems items.
func TestRunsForm(t *testing.T) {
	for _, cfg := range []Config{{}, {GoroutinePerConn: true}} {
		var bf, cf atomic.Int64
		_, addr := startServerTuned(t, cfg, func(s *Server) {
			s.bloom = countedBloom{s.bloom, &bf}
			s.cuckoo = countedCuckoo{s.cuckoo, &cf}
		})
		c := dialRaw(t, addr)
		c.do("BF.MADD", "b", "i0", "i1", "i2")
		c.do("CF.INSERT", "c", "ITEMS", "i0", "i1", "i2")
		for _, tc := range []struct {
			verb    string
			calls   *atomic.Int64
			n, most int64
		}{
			{"BF.EXISTS", &bf, 200, 4}, {"CF.EXISTS", &cf, 200, 4},
			{"BF.EXISTS", &bf, 600, 8}, // more than maxRun: at least three runs
		} {
			var sent strings.Builder
			for i := range tc.n {
				sent.WriteString(encodeCommand(tc.verb, strings.ToLower(tc.verb[:2])[:1], "i"+strconv.FormatInt(i%5, 10)))
			}
			before := tc.calls.Load()
			c.send(sent.String())
			for i := range tc.n {
				want := rawInt(map[bool]int64{true: 1}[i%5 < 3])
				if got := c.reply(); got != want {
					t.Fatalf("GoroutinePerConn %v, %s %d: %q, want %q", cfg.GoroutinePerConn, tc.verb, i, got, want)
				}
			}
			calls := tc.calls.Load() - before
			if calls < (tc.n+maxRun-1)/maxRun || calls > tc.most {
				t.Errorf("GoroutinePerConn %v: %d pipelined %s took %d calls of the store, want %d to %d",
					cfg.GoroutinePerConn, tc.n, tc.verb, calls, (tc.n+maxRun-1)/maxRun, tc.most)
			}
		}
		// Large BF.MEXISTS: batchItems bounds a run's items, and
		// maxRunBytes its copies (items of 4 KiB: at most 8 a run).
		var sent strings.Builder
		items := []string{"BF.MEXISTS", "b"}
		for i := range 400 {
			items = append(items, "i"+strconv.Itoa(i))
		}
		for range 10 {
			sent.WriteString(encodeCommand(items...))
		}
		big := strings.Repeat("x", 4096)
		for range 40 {
			sent.WriteString(encodeCommand("BF.EXISTS", "b", big))
		}
		before := bf.Load()
		c.send(sent.String())
		for range 10 {
			if got := c.reply(); !strings.HasPrefix(got, "*400\r\n:1\r\n:1\r\n:1\r\n:0\r\n") {
				t.Fatalf("BF.MEXISTS of 400: %q", truncate(got, 40))
			}
		}
		for range 40 {
			if got := c.reply(); got != rawInt(0) {
				t.Fatalf("BF.EXISTS of 4 KiB: %q", got)
			}
		}
		if calls := bf.Load() - before; calls < 5+5 || calls > 30 {
			t.Errorf("GoroutinePerConn %v: 10 BF.MEXISTS of 400 and 40 BF.EXISTS of 4 KiB took %d calls, want 10 to 30",
				cfg.GoroutinePerConn, calls)
		}
	}
}

// TestRunBytesBound: commands already whole in the input join a run only
// while its copies stay within maxRunBytes, however much input is
// buffered (an event loop's input holds whole commands of any size).
func TestRunBytesBound(t *testing.T) {
	c := dispatchConn(t)
	var calls atomic.Int64
	c.srv.bloom = countedBloom{c.srv.bloom, &calls}
	var in resp.Buffer
	c.r = resp.NewBufferReader(&in, c.srv.cfg.Limits)
	item := strings.Repeat("x", 4096)
	var p []byte
	for range 40 {
		p = append(p, encodeCommand("BF.EXISTS", "bf", item)...)
	}
	runPipeline(c, &in, p, nil)
	// A run holds the key and 7 items of 4 KiB (8 would pass 32 KiB).
	if got, want := calls.Load(), int64((40+6)/7); got != want {
		t.Errorf("40 buffered BF.EXISTS of 4 KiB: %d runs, want %d", got, want)
	}
	if cap(c.pipe.arena) > 2*maxRunBytes {
		t.Errorf("the run's arena grew to %d bytes", cap(c.pipe.arena))
	}
}
