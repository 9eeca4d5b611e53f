package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLogFileWrite: the log's appends put every byte where a write(2)
// would, whichever way they go (through the mapping where Allocate
// reserved the blocks, crossing windows; a raw pwrite beyond; the
// runtime's after a slow write), the file's size runs ahead by zeros only
// until Truncate cuts them, and failures carry the file's name and the
// system's error.
func TestLogFileWrite(t *testing.T) {
	big := make([]byte, mapWindow+mapWindow/2) // crosses a window's end
	for i := range big {
		big[i] = byte(i%251 + 1)
	}
	for _, tc := range []struct {
		name    string
		reserve int64 // bytes reserved before writing
		slow    bool
	}{
		{"mapped", 8 << 20, false},
		{"mapped then written", mapWindow + 100, false},
		{"written", 0, false},
		{"through the runtime", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lf, name := openTestLog(t)
			if tc.reserve > 0 {
				if err := lf.Allocate(0, tc.reserve); err != nil {
					t.Skipf("this filesystem cannot preallocate: %v", err)
				}
			}
			if tc.slow {
				lf.rawUntil = time.Now().Add(time.Hour) // as after a slow write
			}
			var want []byte
			for i, b := range [][]byte{[]byte("first\r\n"), big, []byte("last\r\n")} {
				if n, err := lf.Write(b); n != len(b) || err != nil {
					t.Fatalf("write %d: %d of %d bytes, %v", i, n, len(b), err)
				}
				want = append(want, b...)
			}
			got, err := os.ReadFile(name)
			if err != nil || !bytes.HasPrefix(got, want) || bytes.ContainsFunc(got[len(want):], func(r rune) bool { return r != 0 }) {
				t.Fatalf("file has %d bytes (%v), want the %d written and zeros only", len(got), err, len(want))
			}
			if err := lf.Truncate(int64(len(want))); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("after Truncate the file has %d bytes (%v), want exactly the %d written", len(got), err, len(want))
			}
		})
	}

	name := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ro, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	bad := newLogFile(ro, 0)
	defer bad.Close()
	_, err = bad.Write([]byte("x"))
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != name || !errors.Is(err, unix.EBADF) {
		t.Errorf("write to a read-only file: %v, want a PathError for %s with EBADF", err, name)
	}
}

// TestLogFileFault: a store into the mapping after someone else cut the
// file is an error of the write, not a crash of the server.
func TestLogFileFault(t *testing.T) {
	lf, name := openTestLog(t)
	if err := lf.Allocate(0, 1<<20); err != nil {
		t.Skipf("this filesystem cannot preallocate: %v", err)
	}
	if _, err := lf.Write(make([]byte, 10)); err != nil || lf.win == nil {
		t.Fatalf("first write: %v (mapped: %v)", err, lf.win != nil)
	}
	if err := os.Truncate(name, 0); err != nil { // behind the log's back
		t.Fatal(err)
	}
	_, err := lf.Write(make([]byte, 3*4096))
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "store" || pe.Path != name {
		t.Fatalf("store past the cut: %v, want a store PathError for %s", err, name)
	}
}

// BenchmarkLogFileWrite: one append of a batch of records, through the
// mapping (the blocks reserved) and with pwrite(2) (none reserved).
func BenchmarkLogFileWrite(b *testing.B) {
	for _, size := range []int{80, 1280} {
		for _, mapped := range []bool{true, false} {
			b.Run(fmt.Sprintf("bytes=%d/mapped=%v", size, mapped), func(b *testing.B) {
				lf, _ := openTestLog(b)
				batch := bytes.Repeat([]byte("x"), size)
				b.ReportAllocs()
				b.SetBytes(int64(size))
				for i := 0; b.Loop(); i++ {
					if mapped && lf.pos+int64(size) > lf.reserved {
						if err := lf.Allocate(lf.reserved, 64<<20); err != nil {
							b.Skip(err)
						}
					}
					if _, err := lf.Write(batch); err != nil {
						b.Fatal(err)
					}
					if i%100000 == 99999 {
						lf.Sync() // as everysec does: the pages are clean (and write-protected) again
					}
				}
			})
		}
	}
}

// openTestLog opens a new, empty log file to append to, closed at the
// end of the test.
func openTestLog(t testing.TB) (*logFile, string) {
	name := filepath.Join(t.TempDir(), "log")
	f, err := os.OpenFile(name, logOpenFlags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	lf := newLogFile(f, 0)
	t.Cleanup(func() { lf.Close() })
	return lf, name
}

// TestStoreForward: the ordered copy into the mapping copies exactly,
// at every length and alignment, and nothing past the source's length.
func TestStoreForward(t *testing.T) {
	src := make([]byte, 80)
	for i := range src {
		src[i] = byte(i + 1)
	}
	for n := 0; n <= 40; n++ {
		for off := 0; off < 8; off++ {
			dst := make([]byte, 64)
			storeForward(dst[off:], src[off:off+n])
			want := make([]byte, 64)
			copy(want[off:], src[off:off+n])
			if !bytes.Equal(dst, want) {
				t.Fatalf("n %d, offset %d: %v, want %v", n, off, dst, want)
			}
		}
	}
}

// BenchmarkJournalAdd: framing the record of an add of one item to an
// existing filter and storing it in a mapped log, in the INSERT …
// NOCREATE form and the short BF.ADD form (replay.go, shortAdds).
func BenchmarkJournalAdd(b *testing.B) {
	item := []byte("000012345678") // redis-benchmark's __rand_int__
	for _, tc := range []struct {
		name string
		args [][]byte
	}{
		{"form=insert", [][]byte{wordInsert, []byte("bf"), wordNoCreate, wordItems, item}},
		{"form=short", [][]byte{wordAdd, []byte("bf"), item}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			lf, _ := openTestLog(b)
			var rec []byte
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				rec = appendRecord(rec[:0], tc.args)
				benchLogWrite(b, lf, rec, i)
			}
			b.SetBytes(int64(len(rec)))
		})
	}
	// Sixteen adds merged into one record (aof_merge.go), written as
	// one event-loop turn writes them: the cost per add.
	b.Run("form=merged16", func(b *testing.B) {
		lf, _ := openTestLog(b)
		var p persistence
		key := []byte("bf")
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			p.merge(wordAdd, key, item)
			if i%16 != 15 {
				continue
			}
			p.closeOpen()
			benchLogWrite(b, lf, p.buf, i)
			p.buf = p.buf[:0]
		}
	})
}

// benchLogWrite writes rec, the i-th add's, to lf, reserving room as the
// server does, and fsyncs every 100,000 adds, as everysec does.
func benchLogWrite(b *testing.B, lf *logFile, rec []byte, i int) {
	if lf.pos+int64(len(rec)) > lf.reserved {
		if err := lf.Allocate(lf.reserved, 64<<20); err != nil {
			b.Skip(err)
		}
	}
	if _, err := lf.Write(rec); err != nil {
		b.Fatal(err)
	}
	if i%100000 == 99999 {
		lf.Sync()
	}
}
