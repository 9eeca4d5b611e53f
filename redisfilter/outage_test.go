package redisfilter

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestKillDuringWrites kills redis-server (SIGKILL) while writers add
// items, then restarts it: calls fail during the outage, succeed after it,
// and every item whose Add returned no error is present afterwards (Redis
// runs with appendfsync always, so what it acknowledged is on disk).
func TestKillDuringWrites(t *testing.T) {
	ctx := context.Background()
	srv, c := newClient(t, "--appendonly", "yes", "--appendfsync", "always")
	f := mustCreate(t, c, "outage", 100_000, 0.01, WithRefresh(0))
	const writers = 4
	var (
		mu       sync.Mutex
		acked    []string
		failures int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				item := "w" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				var err error
				if i%2 == 0 {
					_, err = f.Add(cctx, []byte(item))
				} else { // batches too
					_, err = f.AddMany(cctx, [][]byte{[]byte(item), []byte(item + "b")})
				}
				cancel()
				mu.Lock()
				if err == nil {
					acked = append(acked, item)
					if i%2 == 1 {
						acked = append(acked, item+"b")
					}
				} else {
					failures++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	srv.Kill()
	during := 0
	for deadline := time.Now().Add(10 * time.Second); during == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // until the writers see the outage
		mu.Lock()
		during = failures
		mu.Unlock()
	}
	srv.Restart(t)
	time.Sleep(500 * time.Millisecond) // writers recover
	close(stop)
	wg.Wait()
	if during == 0 {
		t.Fatal("no call failed while Redis was down")
	}
	mu.Lock()
	defer mu.Unlock()
	ok, err := f.ExistsMany(ctx, toBytes(acked))
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	for i, present := range ok {
		if !present {
			t.Fatalf("%q was acknowledged but is missing after the restart", acked[i])
		}
	}
	// The writers also succeeded after the restart.
	if isNew, err := f.Add(ctx, []byte("after")); err != nil || !isNew {
		t.Fatalf("Add after restart: %v, %v", isNew, err)
	}
	t.Logf("%d items acknowledged, %d calls failed during the outage", len(acked), failures)
}

func toBytes(s []string) [][]byte {
	out := make([][]byte, len(s))
	for i, v := range s {
		out[i] = []byte(v)
	}
	return out
}
