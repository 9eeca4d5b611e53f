package server

import (
	"strings"
	"testing"
)

// TestLoadLimitsEitherWay: startup does not depend on how the server
// last stopped (docs/DESIGN.md §8). A filter beyond a lowered
// per-filter limit stops startup with the same advice (start with larger
// limits, never truncate the log) whether it comes from the snapshot (a
// clean shutdown) or from the log (a crash); under a raised limit it
// loads either way, whole. The total limit does not hold while loading,
// either way, and holds for new filters once serving.
func TestLoadLimitsEitherWay(t *testing.T) {
	for _, stop := range []string{"clean shutdown", "crash"} {
		t.Run(stop, func(t *testing.T) {
			dir := t.TempDir()
			ps := startPServer(t, Config{Dir: dir, MaxFilterBytes: 1 << 20})
			ps.do(t, "BF.RESERVE", "big", "0.01", "400000") // about 500 KB
			its := pItems("i", 1000)
			ps.do(t, append([]any{"BF.MADD", "big"}, its...)...)
			data := dir
			if stop == "crash" {
				data = copyDataDir(t, dir) // the log, no snapshot of the filter
			}
			ps.shutdown(t)

			lowered := copyDataDir(t, data)
			_, err := newPServer(t, Config{Dir: lowered, MaxFilterBytes: 256 << 10})
			switch {
			case err == nil:
				t.Fatal("a 500 KB filter loaded under a 256 KiB per-filter limit")
			case !strings.Contains(err.Error(), "start with larger limits to load it"):
				t.Fatalf("no advice to start with larger limits: %v", err)
			case strings.Contains(err.Error(), "truncate"), strings.Contains(err.Error(), "backup"):
				t.Fatalf("advice to repair the data for a limit: %v", err)
			}

			raised := startPServer(t, Config{Dir: copyDataDir(t, data), MaxFilterBytes: 4 << 20})
			raised.assertPresent(t, "big", its)

			total := startPServer(t, Config{Dir: copyDataDir(t, data), MaxFilterBytes: 4 << 20, MaxMemory: 64 << 10})
			total.assertPresent(t, "big", its)
			if _, err := total.rdb.Do(t.Context(), "BF.RESERVE", "more", "0.01", "1000").Result(); err == nil ||
				err.Error() != string(errNoMemory) {
				t.Fatalf("a new filter beyond the total limit once serving: %v, want %q", err, errNoMemory)
			}
		})
	}
}
