package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPersistLockFileRemoved: the data directory's lock is held on the
// directory itself, so deleting the LOCK file while a server runs does
// not let a second server in (it did, and acknowledged writes were lost).
func TestPersistLockFileRemoved(t *testing.T) {
	dir := t.TempDir()
	ps := startPServer(t, Config{Dir: dir})
	ps.do(t, "BF.ADD", "k", "x")
	if err := os.Remove(filepath.Join(dir, lockName)); err != nil {
		t.Fatal(err)
	}
	second, err := newPServer(t, Config{Dir: dir})
	if err == nil {
		second.shutdown(t)
		t.Fatalf("a second server started on %s after its LOCK file was removed", dir)
	}
	if msg := err.Error(); !strings.Contains(msg, "in use by another bloomery server") || !strings.Contains(msg, dir) {
		t.Fatalf("second server on %s: %v; want a message naming the directory in use", dir, err)
	}
	ps.do(t, "BF.ADD", "k", "y") // the first is unharmed
	ps.shutdown(t)
	ps2 := startPServer(t, Config{Dir: dir}) // the lock is released
	ps2.assertPresent(t, "k", []any{"x", "y"})
}
