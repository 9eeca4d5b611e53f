package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A key that expires and is re-created must come back after kill -9 as
// the clients last saw it: the expiry is journaled (as a DEL) before the
// re-creation, and replay (which runs with the clock stopped) deletes the
// old key at the same point. Before that, the re-creation was replayed
// into the old filter: acknowledged items lost, expired items back, or
// startup refused on a LOADCHUNK.

// expiryScenario re-creates key k after it expired, then the test kills
// the server and checks k after the restart.
type expiryScenario struct {
	name     string
	recreate func(t *testing.T, rdb *redis.Client)
	check    func(t *testing.T, rdb *redis.Client)
}

func TestExpiryRecreateKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills bloomery serve")
	}
	bin := buildBloomery(t)
	for _, sc := range []expiryScenario{{
		name: "add",
		recreate: func(t *testing.T, rdb *redis.Client) {
			wantReply(t, rdb, int64(1), "BF.ADD", "k", "b")
			wantReply(t, rdb, int64(1), "BF.EXISTS", "k", "b")
		},
		check: func(t *testing.T, rdb *redis.Client) {
			wantReply(t, rdb, int64(1), "BF.EXISTS", "k", "b")
			wantReply(t, rdb, int64(1), "BF.CARD", "k")
			wantReply(t, rdb, int64(-1), "PTTL", "k")
		},
	}, {
		name: "insert-then-expire",
		recreate: func(t *testing.T, rdb *redis.Client) {
			wantReply(t, rdb, []any{int64(1)}, "BF.INSERT", "k", "ERROR", "0.000001", "ITEMS", "b")
			wantReply(t, rdb, int64(1), "EXPIRE", "k", "100000")
		},
		check: func(t *testing.T, rdb *redis.Client) {
			wantReply(t, rdb, int64(1), "BF.EXISTS", "k", "b")
			wantReply(t, rdb, int64(0), "BF.EXISTS", "k", "a") // the expired filter's item
			wantReply(t, rdb, int64(1), "BF.CARD", "k")
			if ttl := do(t, rdb, "TTL", "k").(int64); ttl < 99_000 || ttl > 100_000 {
				t.Errorf("TTL k = %d after restart, want about 100000", ttl)
			}
		},
	}, {
		name: "loadchunk",
		recreate: func(t *testing.T, rdb *redis.Client) {
			for it := int64(0); ; {
				r := do(t, rdb, "BF.SCANDUMP", "src", it).([]any)
				if it = r[0].(int64); it == 0 {
					break
				}
				wantReply(t, rdb, "OK", "BF.LOADCHUNK", "k", it, r[1])
			}
		},
		check: func(t *testing.T, rdb *redis.Client) {
			want := fmt.Sprint(do(t, rdb, "BF.INFO", "src"))
			if got := fmt.Sprint(do(t, rdb, "BF.INFO", "k")); got != want {
				t.Errorf("BF.INFO k = %s, want src's %s", got, want)
			}
			wantReply(t, rdb, []any{int64(1), int64(1), int64(1)}, "BF.MEXISTS", "k", "s1", "s2", "s3")
			wantReply(t, rdb, int64(-1), "PTTL", "k")
		},
	}} {
		t.Run(sc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := startBloomery(t, bin, dir, "always")
			rdb := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2, MaxRetries: -1})
			defer rdb.Close()
			wantReply(t, rdb, "OK", "BF.RESERVE", "src", "0.0001", "1000")
			wantReply(t, rdb, []any{int64(1), int64(1), int64(1)}, "BF.MADD", "src", "s1", "s2", "s3")
			wantReply(t, rdb, int64(1), "BF.ADD", "k", "a")
			wantReply(t, rdb, int64(1), "PEXPIRE", "k", "200")
			time.Sleep(400 * time.Millisecond) // k expires (the sweep or the next access deletes it)
			sc.recreate(t, rdb)
			p.kill() // SIGKILL
			p = startBloomery(t, bin, dir, "always")
			rdb2 := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2, MaxRetries: -1})
			defer rdb2.Close()
			sc.check(t, rdb2)
		})
	}
}

// do runs a command that must succeed and returns its reply.
func do(t *testing.T, rdb *redis.Client, args ...any) any {
	t.Helper()
	v, err := rdb.Do(context.Background(), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// wantReply runs a command and checks its reply.
func wantReply(t *testing.T, rdb *redis.Client, want any, args ...any) {
	t.Helper()
	if got := do(t, rdb, args...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%v = %v, want %v", args, got, want)
	}
}
