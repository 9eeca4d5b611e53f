package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// gatedSyncFile holds every Sync until the test releases it, with the
// error to return.
type gatedSyncFile struct {
	aofFile
	entered chan struct{}
	release chan error
	opened  atomic.Bool // Syncs pass through (the test is over)
}

func newGatedSync(p *persistence) *gatedSyncFile {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	g := &gatedSyncFile{aofFile: p.file, entered: make(chan struct{}, 1), release: make(chan error)}
	p.file = g
	return g
}

func (g *gatedSyncFile) Sync() error {
	if g.opened.Load() {
		return g.aofFile.Sync()
	}
	g.entered <- struct{}{}
	if err := <-g.release; err != nil {
		return err
	}
	return g.aofFile.Sync()
}

// openQuietPersistence opens a memstore with everysec persistence whose
// flusher runs only when asked (kickSync), not every second.
func openQuietPersistence(t *testing.T, dir string) (*memstore, *persistence) {
	return openTestPersistenceWith(t, Config{Dir: dir, AppendFsync: "everysec", logFlushEvery: time.Hour})
}

// openGated opens a quiet persistence whose fsyncs wait for the test
// (gatedSyncFile), closed at the test's end.
func openGated(t *testing.T) (string, *persistence, *gatedSyncFile) {
	dir := t.TempDir()
	_, p := openQuietPersistence(t, dir)
	g := newGatedSync(p)
	t.Cleanup(func() {
		g.opened.Store(true)
		p.close()
	})
	return dir, p, g
}

// checkDelKeys checks that the log holds the records of appendDurable's
// keys 0 to n−1, each once, in order.
func checkDelKeys(t *testing.T, name string, n int) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimRight(b, "\x00")
	lr := newLogReader(bytes.NewReader(b), int64(len(b)))
	for i := 0; ; i++ {
		args, err := lr.next()
		if err == io.EOF {
			if i != n {
				t.Fatalf("%d records in the log, want %d", i, n)
			}
			return
		}
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if want := fmt.Sprint("key", i); len(args) != 2 || string(args[1]) != want {
			t.Fatalf("record %d: %q, want DEL %s", i, args, want)
		}
	}
}

// appendDurable appends n records from first and waits for them, failing
// the test if the wait takes more than a few seconds (it would be
// waiting for the held fsync).
func appendDurable(t *testing.T, p *persistence, first, n int) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for i := first; i < first+n; i++ {
			p.append([]byte("DEL"), []byte(fmt.Sprint("key", i)))
			if err := p.waitDurable(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a wait for a write held on for the fsync")
	}
}

// syncState returns how far the log is fsynced and written, and the
// bytes kept for a failed fsync.
func syncState(p *persistence) (synced, written int64, copied int) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.fileSynced, p.fileWritten, len(p.unsynced)
}

// With everysec, the flusher's fsync runs without wmu: replies wait for
// their records to be written, never for the disk, and the bytes
// written during the fsync stay in the copy for the next one.
func TestSyncBehindLeavesWritersFree(t *testing.T) {
	dir, p, g := openGated(t)
	appendDurable(t, p, 0, 10)
	res := make(chan error, 1)
	go func() { res <- p.syncBehind() }()
	<-g.entered
	before := p.fsyncs.Load()
	appendDurable(t, p, 10, 100)
	if n := p.fsyncs.Load(); n != before {
		t.Fatalf("%d fsyncs while the first was held", n-before)
	}
	g.release <- nil
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	synced, written, copied := syncState(p)
	if synced == 0 || synced >= written || int64(copied) != written-synced {
		t.Fatalf("after the fsync: synced to %d, written %d, %d bytes kept", synced, written, copied)
	}
	go func() { res <- p.syncBehind() }()
	<-g.entered
	g.release <- nil
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	synced, written, copied = syncState(p)
	if synced != written || copied != 0 || p.synced.Load() != p.written.Load() {
		t.Fatalf("after the second fsync: synced to %d, written %d, %d bytes kept", synced, written, copied)
	}
	checkDelKeys(t, filepath.Join(dir, logName(1)), 110)
}

// When the flusher's fsync fails, everything written since the last good
// one, including what was written while it ran, is written again, once;
// the waits fail until that succeeds.
func TestSyncBehindFailureRewrites(t *testing.T) {
	dir, p, g := openGated(t)
	appendDurable(t, p, 0, 5)
	go func() { g.release <- nil }() // the first fsync succeeds
	if err := p.syncBehind(); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	appendDurable(t, p, 5, 5)
	res := make(chan error, 1)
	go func() { res <- p.syncBehind() }()
	<-g.entered
	appendDurable(t, p, 10, 5)
	g.release <- errInjected
	if err := <-res; !errors.Is(err, errInjected) {
		t.Fatalf("the fsync: %v", err)
	}
	p.append([]byte("DEL"), []byte("key15"))
	go func() { g.release <- errInjected }()
	if err := p.waitDurable(); !errors.Is(err, errInjected) {
		t.Fatalf("a wait after the failure: %v", err)
	}
	<-g.entered
	go func() { g.release <- nil }()
	if err := p.waitDurable(); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	<-g.entered
	checkDelKeys(t, filepath.Join(dir, logName(1)), 16)
}

// Writing past kickUnsynced asks the flusher for an fsync at once, not at
// its next second.
func TestSyncKickedEarly(t *testing.T) {
	dir := t.TempDir()
	_, p := openQuietPersistence(t, dir)
	defer p.close()
	big := make([]byte, 64<<10)
	for i := 0; i*len(big) <= kickUnsynced; i++ {
		p.append([]byte("DEL"), big, []byte(fmt.Sprint(i)))
		if err := p.waitDurable(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.fsyncs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no fsync after writing past kickUnsynced")
		}
		time.Sleep(time.Millisecond)
	}
}
