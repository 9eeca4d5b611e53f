package redisbench

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/bloomery/bloom/bench"
	"github.com/zeromicro/go-zero/core/logx"
)

func TestMain(m *testing.M) {
	logx.Disable() // go-zero logs slow calls to stdout
	os.Exit(m.Run())
}

// TestRedisLibs runs every filter and way of calling it, as cmd/redis
// does but tiny, against a real redis-server that StartRedis starts: Add
// of all keys from several goroutines, then Exists of a half-present mix
// on a filter restored from a Filled snapshot. Nothing inserted may test
// negative, each filter's own commands must show in the server's
// statistics, and a timed Drive must stop on time.
func TestRedisLibs(t *testing.T) {
	const n = 2000
	ctx := context.Background()
	srv, err := StartRedis("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	env, err := NewRedisEnv(srv.Addr(), n, 0.01, 20*n)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	flat := bench.Keys(5, n)
	keys := bench.Split(flat)
	queries, present := bench.Queries(5, flat, n)
	want := map[string]string{RedisGoZero: "evalsha", RedisFilter: "bitfield", RedisGoZeroFilter: "bitfield"}
	wantRO := map[string]string{RedisGoZero: "evalsha", RedisFilter: "getrange", RedisGoZeroFilter: "bitfield_ro"}

	for _, name := range RedisLibNames {
		filled, err := env.Filled(ctx, name, keys)
		if err != nil {
			t.Fatalf("%s: Filled: %v", name, err)
		}
		if len(filled) == 0 {
			t.Fatalf("%s: empty snapshot", name)
		}
		batches := []int{0, 100}
		if name == RedisGoZero {
			batches = []int{0}
		}
		for _, batch := range batches {
			// open flushes the server or restores filled into it, opens
			// the filter and resets the statistics.
			open := func(create bool) *RedisLib {
				t.Helper()
				err := env.Flush(ctx)
				if !create {
					err = env.Restore(ctx, filled)
				}
				if err != nil {
					t.Fatal(err)
				}
				l, err := env.Open(ctx, name, batch, create)
				if err == nil {
					err = ResetRedisStats(ctx, env.Client)
				}
				if err != nil {
					t.Fatalf("%s batch %d: open (create %v): %v", name, batch, create, err)
				}
				return l
			}
			add := open(true)
			done, _, err := Drive(ctx, keys, max(1, batch), 3, n, 0, add.Add)
			if err != nil || done != n {
				t.Fatalf("%s batch %d: Add did %d of %d: %v", name, batch, done, n, err)
			}
			checkStats(t, ctx, env, name+" Add", want[name])
			found, fn := existsAll(t, ctx, add, keys, batch)
			if fn != 0 || found != n {
				t.Errorf("%s batch %d: after Add, %d of %d keys found", name, batch, found, n)
			}

			ex := open(false)
			pos, fn := existsAll(t, ctx, ex, queries, batch)
			if fn != 0 || pos < len(present) || pos > len(present)+n/20 {
				t.Errorf("%s batch %d: restored filter: %d positives of %d present queries, %d false negatives",
					name, batch, pos, len(present), fn)
			}
			checkStats(t, ctx, env, name+" Exists", wantRO[name])

			start := time.Now()
			done, elapsed, err := Drive(ctx, queries, max(1, batch), 2, 0, 20*time.Millisecond, func(ctx context.Context, items [][]byte) error {
				_, _, err := ex.Exists(ctx, items)
				return err
			})
			if err != nil || done == 0 || elapsed > time.Since(start) || elapsed > 2*time.Second {
				t.Errorf("%s batch %d: timed Drive: %d items in %v: %v", name, batch, done, elapsed, err)
			}
		}
	}
	if _, err := env.Open(ctx, RedisGoZero, 100, false); err == nil {
		t.Error("go-zero with batches: no error")
	}
}

// existsAll tests items from 2 goroutines and returns positives and false
// negatives.
func existsAll(t *testing.T, ctx context.Context, l *RedisLib, items [][]byte, batch int) (int, int) {
	t.Helper()
	results := make(chan [2]int, len(items))
	_, _, err := Drive(ctx, items, max(1, batch), 2, len(items), 0, func(ctx context.Context, items [][]byte) error {
		pos, fn, err := l.Exists(ctx, items)
		results <- [2]int{pos, fn}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	close(results)
	var pos, fn int
	for r := range results {
		pos, fn = pos+r[0], fn+r[1]
	}
	return pos, fn
}

// checkStats checks that the server counted command among the filter's
// work and that its CPU time is read.
func checkStats(t *testing.T, ctx context.Context, env *RedisEnv, what, command string) {
	t.Helper()
	s, err := ReadRedisStats(ctx, env.Client)
	if err != nil {
		t.Fatal(err)
	}
	w := s.Work()
	if w[command].Calls == 0 {
		t.Errorf("%s: no %s in the server's work commands %v", what, command, w)
	}
	for name := range w {
		if name == "setbit" || name == "getbit" || name == "flushall" || name == "config|resetstat" {
			t.Errorf("%s: %s counted as the filter's work", what, name)
		}
	}
	if s.CPU <= 0 {
		t.Errorf("%s: server CPU %v", what, s.CPU)
	}
}

func TestMachineCPU(t *testing.T) {
	busy0, ok := MachineCPU()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("MachineCPU unmeasured on Linux")
		}
		t.Skip("MachineCPU is measured on Linux only")
	}
	start := time.Now()
	for time.Since(start) < 200*time.Millisecond { // keep a core busy
	}
	busy1, _ := MachineCPU()
	if d := busy1 - busy0; d < 100*time.Millisecond {
		t.Fatalf("the machine was busy %v while this test spun 200ms", d)
	}
}
