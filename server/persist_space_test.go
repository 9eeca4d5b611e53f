package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The log under a full disk (aof_space.go) and replies that wait for the
// log (conn.flush).

// blockingFile is an aofFile whose writes wait until release is closed.
type blockingFile struct {
	aofFile
	release chan struct{}
}

func (f *blockingFile) Write(b []byte) (int, error) {
	<-f.release
	return f.aofFile.Write(b)
}

// No reply byte leaves before the records of the write commands it
// acknowledges are written to the log, however large the replies of the
// pipeline grow: here writes followed by a read of megabytes (the replies
// once went out 16 KiB at a time, before the log write, when the buffer
// filled, so a kill -9 could lose an acknowledged write).
func TestRepliesWaitForTheLog(t *testing.T) {
	ps := startPServer(t, Config{Dir: t.TempDir(), AppendFsync: "everysec"})
	ps.do(t, "BF.RESERVE", "big", 0.001, 1000000) // a 2 MB filter
	p := ps.srv.persist
	bf := &blockingFile{release: make(chan struct{})}
	p.wmu.Lock()
	bf.aofFile = p.file
	p.file = bf
	p.wmu.Unlock()
	var once sync.Once
	unblock := func() { once.Do(func() { close(bf.release) }) }
	t.Cleanup(unblock) // before the server's shutdown, if the test fails

	raw := dialRaw(t, ps.addr)
	raw.send("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\na\r\n" +
		"*3\r\n$11\r\nBF.SCANDUMP\r\n$3\r\nbig\r\n$1\r\n1\r\n")
	raw.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	var b [1]byte
	if m, err := raw.nc.Read(b[:]); m > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a reply arrived while the log write was blocked (%d bytes, %v)", m, err)
	}
	unblock()
	if got := raw.reply(); got != ":1\r\n" {
		t.Fatalf("BF.ADD: %q", got)
	}
	if got := raw.reply(); len(got) < 1<<20 {
		t.Fatalf("BF.SCANDUMP: %d bytes", len(got))
	}
}

// spaceFile is an aofFile on a disk that is full on demand: it cannot
// allocate, and writes past what it allocated fail as a real full disk's.
type spaceFile struct {
	aofFile
	full atomic.Bool
}

var errNoSpace = &os.PathError{Op: "fallocate", Path: "appendonly.aof", Err: syscall.ENOSPC}

func (f *spaceFile) Allocate(off, n int64) error {
	if f.full.Load() {
		return errNoSpace
	}
	return f.aofFile.Allocate(off, n)
}

// disk is a way to fill the disk of a server's data directory and free it.
type disk struct {
	name       string
	dir        func(t *testing.T) string
	fill, free func(t *testing.T, ps *pServer)
}

// tmpfsDisk is a real 8 MiB tmpfs, where the test can mount one (root).
func tmpfsDisk(t *testing.T) (disk, bool) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Logf("cannot mount a tmpfs (%v: %s); the injected full disk runs instead", err, out)
		return disk{}, false
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	filler := filepath.Join(mnt, "filler")
	return disk{
		name: "tmpfs",
		dir:  func(*testing.T) string { return filepath.Join(mnt, "data") },
		fill: func(t *testing.T, _ *pServer) {
			f, err := os.Create(filler)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			chunk := make([]byte, 64<<10)
			for {
				if _, err := f.Write(chunk); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatal(err)
					}
					break
				}
			}
			// The last partial pages too.
			for {
				if _, err := f.Write(chunk[:512]); err != nil {
					break
				}
			}
		},
		free: func(t *testing.T, _ *pServer) {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		},
	}, true
}

// injectedDisk fails allocation under the log of a normal directory.
func injectedDisk() disk {
	var sf *spaceFile
	return disk{
		name: "injected",
		dir:  func(t *testing.T) string { return t.TempDir() },
		fill: func(t *testing.T, ps *pServer) {
			p := ps.srv.persist
			p.wmu.Lock()
			sf = &spaceFile{aofFile: p.file}
			p.file = sf
			p.mu.Lock()
			p.allocEnd = p.logSize // what was allocated is used up
			p.mu.Unlock()
			p.wmu.Unlock()
			sf.full.Store(true)
		},
		free: func(*testing.T, *pServer) { sf.full.Store(false) },
	}
}

// On a full disk, write commands are refused with MISCONF before they
// change anything (the items of a refused BF.MADD are absent), reads and
// the connection go on, nothing piles up in memory, and writes resume by
// themselves once space returns. Every acknowledged item survives a crash
// and a restart.
func TestFullDisk(t *testing.T) {
	disks := []disk{injectedDisk()}
	if d, ok := tmpfsDisk(t); ok {
		disks = append(disks, d)
	}
	for _, d := range disks {
		t.Run(d.name, func(t *testing.T) {
			dir := d.dir(t)
			ps := startPServer(t, Config{Dir: dir, AppendFsync: "everysec"})
			ctx := context.Background()
			acked := pItems("before", 100)
			ps.do(t, append([]any{"BF.MADD", "k"}, acked...)...)
			d.fill(t, ps)

			big := strings.Repeat("x", 200<<10)
			var refused []any
			var misconf string
			for i := range 200 {
				item := fmt.Sprintf("%d-%s", i, big)
				err := ps.rdb.Do(ctx, "BF.ADD", "k", item).Err()
				if err == nil {
					acked = append(acked, item)
					continue
				}
				misconf = err.Error()
				refused = append(refused, item)
				if len(refused) == 5 {
					break
				}
			}
			if len(refused) == 0 {
				t.Fatal("the disk never filled up")
			}
			if !strings.HasPrefix(misconf, "MISCONF Errors writing to the AOF file:") || !strings.Contains(misconf, "no space left on device") {
				t.Fatalf("refusal %q", misconf)
			}
			for _, it := range refused {
				if ps.rdb.Do(ctx, "BF.EXISTS", "k", it).Val() != int64(0) {
					t.Fatal("a refused item was applied")
				}
			}
			newKey := "new-" + big
			if err := ps.rdb.Do(ctx, "BF.RESERVE", newKey, 0.01, 100).Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF") {
				t.Fatalf("BF.RESERVE on a full disk: %v", err)
			}
			if ps.rdb.Exists(ctx, newKey).Val() != 0 {
				t.Fatal("a refused BF.RESERVE created its key")
			}
			if pending := ps.info(t)["aof_pending_bytes"]; len(pending) > 6 {
				t.Fatalf("%s bytes pending in memory on a full disk", pending)
			}
			ps.assertPresent(t, "k", acked) // reads go on

			d.free(t, ps)
			deadline := time.Now().Add(5 * time.Second)
			for {
				err := ps.rdb.Do(ctx, "BF.ADD", "k", "after").Err()
				if err == nil {
					acked = append(acked, "after")
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("writes did not resume after space returned: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}

			crash := copyDataDir(t, dir) // what the OS holds now: a kill -9
			ps.shutdown(t)
			for _, from := range []string{crash, dir} {
				again := startPServer(t, Config{Dir: from})
				again.assertPresent(t, "k", acked)
				for _, it := range refused {
					if again.rdb.Do(ctx, "BF.EXISTS", "k", it).Val() != int64(0) {
						t.Fatalf("%s: a refused item is present after restart", from)
					}
				}
				again.shutdown(t)
			}
		})
	}
}

// When the log cannot be written (an I/O error, or a full disk on a
// filesystem that cannot preallocate), the write commands already applied
// get MISCONF instead of their reply, the reads of the same pipeline
// their answers; later writes are refused until a retry succeeds; the
// queued records then reach the log once.
func TestWriteFailureAnswersMisconf(t *testing.T) {
	dir := t.TempDir()
	ps := startPServer(t, Config{Dir: dir, AppendFsync: "always"})
	p := ps.srv.persist
	ps.do(t, "BF.ADD", "k", "a")
	ff := injectFailures(p)
	ff.failWrite.Store(true)

	raw := dialRaw(t, ps.addr)
	raw.send("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nb\r\n" +
		"*3\r\n$9\r\nBF.EXISTS\r\n$1\r\nk\r\n$1\r\na\r\n" +
		"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nc\r\n")
	for i, want := range []string{"-MISCONF Errors writing to the AOF file: " + errInjected.Error() + "\r\n", ":1\r\n",
		"-MISCONF Errors writing to the AOF file: " + errInjected.Error() + "\r\n"} {
		if got := raw.reply(); got != want {
			t.Fatalf("reply %d: %q, want %q", i, got, want)
		}
	}
	raw.send("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nd\r\n")
	if got := raw.reply(); !strings.HasPrefix(got, "-MISCONF") {
		t.Fatalf("a write while the log fails: %q", got)
	}
	raw.send("*1\r\n$4\r\nPING\r\n")
	if got := raw.reply(); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}

	ff.failWrite.Store(false)
	time.Sleep(2 * noSpaceRetry)
	raw.send("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\ne\r\n")
	if got := raw.reply(); got != ":1\r\n" {
		t.Fatalf("a write after the log recovered: %q", got)
	}
	ps.shutdown(t)
	// b and c were applied and their records stayed queued until the
	// log could be written; d was refused before it ran.
	again := startPServer(t, Config{Dir: dir})
	again.assertPresent(t, "k", []any{"a", "b", "c", "e"})
	if again.rdb.Do(context.Background(), "BF.EXISTS", "k", "d").Val() != int64(0) {
		t.Fatal("the refused d is present")
	}
}
