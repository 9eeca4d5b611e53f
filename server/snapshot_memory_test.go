//go:build unix

// Sparse files and their allocated blocks (syscall.Stat_t) are Unix's.

package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A snapshot costs memory only for what changes while it is written, and
// a mostly empty filter costs neither disk nor memory for its zeros,
// before or after a restart (issue 11: a 4.49 GB filter holding 100
// items peaked at 4.6 GB during BGSAVE and at shutdown). The real binary,
// measured through /proc.
func TestSnapshotOfSparseFilter(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("resident memory is read from /proc (Linux)")
	}
	bin := buildBloomery(t)
	dir := t.TempDir()
	p := startBloomery(t, bin, dir, "everysec", "--maxmemory-per-filter", "unlimited")
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2, ReadTimeout: time.Minute})
	defer rdb.Close()
	if err := rdb.Do(ctx, "BF.RESERVE", "big", 0.01, 200_000_000).Err(); err != nil {
		t.Fatal(err)
	}
	size := rdb.Do(ctx, "BF.INFO", "big", "SIZE").Val().([]any)[0].(int64)
	// Few items: the bit array is advised to use 2 MB huge pages (speed),
	// so each item in a new place commits 2 MB of it.
	items := pItems("it", 10)
	if err := rdb.Do(ctx, append([]any{"BF.MADD", "big"}, items...)...).Err(); err != nil {
		t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	base := rssOf(t, pid)
	if base > size/4 {
		t.Fatalf("RSS %d MB for a filter of %d MB holding 10 items: its pages are not lazy", base>>20, size>>20)
	}

	// SAVE while a client adds: the peak RSS stays far below the filter
	// (a copy of it, as snapshots once took, would double it).
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				if r := rssOf(t, pid); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	var during []any
	go func() {
		defer wg.Done()
		for i := 0; i < 5; i++ { // each commits a huge page: a few
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			it := "during-" + strconv.Itoa(i)
			if rdb.Do(ctx, "BF.ADD", "big", it).Err() == nil {
				during = append(during, it)
			}
		}
	}()
	if err := rdb.Do(ctx, "SAVE").Err(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if grew := peak.Load() - base; grew > size/8 {
		t.Fatalf("RSS grew by %d MB during SAVE of a %d MB filter", grew>>20, size>>20)
	}

	snap := newestSnapshot(t, dir)
	var st syscall.Stat_t
	if err := syscall.Stat(snap, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size < size || st.Blocks*512 > size/16 {
		t.Fatalf("snapshot of %d MB takes %d MB of disk: not sparse", st.Size>>20, st.Blocks*512>>20)
	}

	// Restart from the snapshot (SHUTDOWN writes a final one): the zeros
	// stay unread into memory, every item is there.
	rdb.Do(ctx, "SHUTDOWN") // the reply is the connection closing
	select {
	case <-p.done:
		p.cmd.Wait()
	case <-time.After(time.Minute):
		t.Fatalf("bloomery serve did not exit after SHUTDOWN:\n%s", p.log())
	}
	again := startBloomery(t, bin, dir, "everysec", "--maxmemory-per-filter", "unlimited")
	if r := rssOf(t, again.cmd.Process.Pid); r > size/4 {
		t.Fatalf("RSS %d MB after loading a %d MB filter holding few items", r>>20, size>>20)
	}
	rdb2 := redis.NewClient(&redis.Options{Addr: again.addr, Protocol: 2})
	defer rdb2.Close()
	for _, it := range append(items, during...) {
		if rdb2.Do(ctx, "BF.EXISTS", "big", it).Val() != int64(1) {
			t.Fatalf("%v lost across the restart (BF.CARD %v; log:\n%s)", it, rdb2.Do(ctx, "BF.CARD", "big").Val(), again.log())
		}
	}
}

// rssOf is process pid's resident set in bytes.
func rssOf(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0 // exited meanwhile
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// newestSnapshot is the path of dir's snapshot of the highest generation.
func newestSnapshot(t *testing.T, dir string) string {
	g, err := listGenerations(dir)
	if err != nil || len(g.snapshots) == 0 {
		t.Fatalf("no snapshot in %s (%v)", dir, err)
	}
	return filepath.Join(dir, snapshotName(g.snapshots[len(g.snapshots)-1]))
}
