package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestAppendRecordFormat(t *testing.T) {
	got := string(appendRecord(nil, [][]byte{[]byte("DEL"), []byte("k"), {}}))
	array := "*3\r\n$3\r\nDEL\r\n$1\r\nk\r\n$0\r\n\r\n"
	if want := array + fmt.Sprintf("+%08x\r\n", crc32c([]byte(array))); got != want {
		t.Fatalf("record %q, want %q", got, want)
	}
	lr := newLogReader(strings.NewReader(got+got), int64(2*len(got)))
	for range 2 {
		args, err := lr.next()
		if err != nil || len(args) != 3 || string(args[0]) != "DEL" || string(args[1]) != "k" || len(args[2]) != 0 {
			t.Fatalf("read back: %q, %v", args, err)
		}
	}
	if _, err := lr.next(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
}

// logRecords returns the start offsets of a log's records and its size.
func logRecords(t testing.TB, name string) []int64 {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimRight(b, "\x00") // the room a running server's mapped appends claimed
	lr := newLogReader(bytes.NewReader(b), int64(len(b)))
	var starts []int64
	for {
		start := lr.off
		if _, err := lr.next(); err == io.EOF {
			return append(starts, start)
		} else if err != nil {
			t.Fatalf("%s at %d: %v", name, start, err)
		}
		starts = append(starts, start)
	}
}

// crashImage writes a few records through a server and returns a copy
// of its directory and the log's record offsets (the last one: the end).
func crashImage(t *testing.T) (dir string, starts []int64) {
	ps := startPServer(t, Config{Dir: t.TempDir(), AppendFsync: "always"})
	ps.do(t, "BF.RESERVE", "k", "0.01", "100")
	ps.do(t, "BF.MADD", "k", "a", "b", "c")
	ps.do(t, "BF.ADD", "k", "the-last-item")
	dir = copyDataDir(t, ps.dir)
	name := filepath.Join(dir, "appendonly.1.aof")
	starts = logRecords(t, name)
	if err := os.Truncate(name, starts[len(starts)-1]); err != nil { // as the server cuts the zeros after the records
		t.Fatal(err)
	}
	return dir, starts
}

// Cutting the log anywhere inside its last record: the server starts,
// warns, and has every change but that one.
func TestPersistTornTail(t *testing.T) {
	image, starts := crashImage(t)
	if len(starts) != 4 {
		t.Fatalf("records at %v, want 3", starts)
	}
	last, end := starts[2], starts[3]
	for cut := last; cut < end; cut++ {
		dir := copyDataDir(t, image)
		name := filepath.Join(dir, "appendonly.1.aof")
		if err := os.Truncate(name, cut); err != nil {
			t.Fatal(err)
		}
		ps := startPServer(t, Config{Dir: dir})
		if got := ps.do(t, "BF.CARD", "k"); got != int64(3) {
			t.Fatalf("cut at %d: BF.CARD = %v, want 3", cut, got)
		}
		ps.assertPresent(t, "k", []any{"a", "b", "c"})
		logs := ps.logs.String()
		warned := strings.Contains(logs, "cutting it off") && strings.Contains(logs, name) &&
			strings.Contains(logs, fmt.Sprintf("offset=%d bytes_dropped=%d", last, cut-last))
		if warned != (cut > last) {
			t.Fatalf("cut at %d (record at %d): warned = %v:\n%s", cut, last, warned, logs)
		}
		if st, err := os.Stat(name); err != nil || st.Size() != last {
			t.Fatalf("cut at %d: log not truncated to %d: %v, %v", cut, last, st.Size(), err)
		}
		ps.shutdown(t)
	}
}

// A log ending in zeros, as a crash leaves the room its mapped appends
// had claimed (after its last record, or after the torn start of one),
// in the newest log or an older one: the server starts with every
// complete record, warns, and cuts the zeros (and the torn record).
func TestPersistZeroTail(t *testing.T) {
	image, starts := crashImage(t)
	last, end := starts[2], starts[3]
	for _, tc := range []struct {
		name  string
		cut   int64 // the log's records are cut here, then the zeros follow
		older bool  // the log is followed by a newer one
		card  int64
		keep  int64 // the log's size after
	}{
		{"after the last record", end, false, 4, end},
		{"inside the last record", last + 5, false, 3, last},
		{"older log", end, true, 4, end},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDataDir(t, image)
			name := filepath.Join(dir, "appendonly.1.aof")
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			b = append(b[:tc.cut], make([]byte, 70000)...) // more than zeroTail reads at once
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.older {
				rec := appendRecord(nil, [][]byte{[]byte("BF.INSERT"), []byte("k"), []byte("ITEMS"), []byte("newer")})
				if err := os.WriteFile(filepath.Join(dir, logName(2)), rec, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ps := startPServer(t, Config{Dir: dir})
			want := tc.card
			if tc.older {
				want++
			}
			if got := ps.do(t, "BF.CARD", "k"); got != want {
				t.Fatalf("BF.CARD = %v, want %d", got, want)
			}
			if !strings.Contains(ps.logs.String(), "the log ends in zeros") {
				t.Errorf("no warning about the zeros:\n%s", ps.logs.String())
			}
			if st, err := os.Stat(name); err != nil || st.Size() != tc.keep {
				t.Fatalf("log not cut to %d: %v, %v", tc.keep, st.Size(), err)
			}
			ps.shutdown(t)
		})
	}
}

// Any byte of a record in the middle flipped: startup fails, naming the
// file, the record's offset and the repair.
func TestPersistCorruptRecord(t *testing.T) {
	image, starts := crashImage(t)
	mid, next := starts[1], starts[2]
	for pos := mid; pos < next; pos++ {
		for _, mask := range []byte{0x01, 0xff} {
			dir := copyDataDir(t, image)
			name := filepath.Join(dir, "appendonly.1.aof")
			b, _ := os.ReadFile(name)
			b[pos] ^= mask
			os.WriteFile(name, b, 0o644)
			_, err := newPServer(t, Config{Dir: dir})
			if err == nil {
				t.Fatalf("byte %d ^ %#x: the server started", pos, mask)
			}
			for _, want := range []string{name, fmt.Sprintf("offset %d:", mid), fmt.Sprintf("truncate -s %d %s", mid, name)} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("byte %d ^ %#x: error %q does not say %q", pos, mask, err, want)
				}
			}
		}
	}
}

// writeLogs writes log files of the given records (a record given as a
// string is written as is).
func writeLogs(t *testing.T, logs ...[]any) string {
	t.Helper()
	dir := t.TempDir()
	for i, recs := range logs {
		var b []byte
		for _, r := range recs {
			switch r := r.(type) {
			case string:
				b = append(b, r...)
			case []string:
				args := make([][]byte, len(r))
				for j, a := range r {
					args[j] = []byte(a)
				}
				b = appendRecord(b, args)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, logName(uint64(i+1))), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPersistBadLogs(t *testing.T) {
	add := []string{"BF.INSERT", "k", "ITEMS", "a"}
	at := func(s string) string { // "offset <of the second record>" + s
		return fmt.Sprintf("offset %d: %s", len(appendRecord(nil, [][]byte{[]byte("BF.INSERT"), []byte("k"), []byte("ITEMS"), []byte("a")})), s)
	}
	torn := "*2\r\n$3\r\nDEL\r\n$1\r\n"
	for _, tc := range []struct {
		name string
		logs [][]any
		want string
	}{
		{"torn older log", [][]any{{add, torn}, {add}}, "appendonly.1.aof: " + at("the file ends inside a record, but a newer log follows")},
		{"unknown command", [][]any{{add, []string{"SET", "k", "v"}}}, at(`cannot apply the record: server: replay: unknown command "SET"`)},
		{"bad arguments", [][]any{{[]string{"BF.RESERVE", "k", "x", "100"}}}, "offset 0: cannot apply the record"},
		{"not RESP", [][]any{{add, "hello\r\n"}}, at(`corrupt record: expected '*'`)},
		{"checksum line", [][]any{{"*1\r\n$8\r\nFLUSHALL\r\n-00000000\r\n"}}, "offset 0: corrupt record: the checksum line is malformed"},
		{"empty array", [][]any{{"*0\r\n+00000000\r\n"}}, "offset 0: corrupt record: a record of no arguments"},
		{"leading zero", [][]any{{"*01\r\n"}}, "offset 0: corrupt record: malformed length line"},
		{"zeros before a record", [][]any{{add, "\x00\x00\x00\x00", add}}, at("corrupt record: expected '*', found '\\x00'")},
		{"torn CRLF", [][]any{{add, "*1\r\n$1\r\nx\rx"}}, at("corrupt record: an argument of 1 bytes is not followed by CRLF")},
		{"torn checksum", [][]any{{add, "*1\r\n$1\r\nx\r\n+12g"}}, at("corrupt record: the checksum line is malformed (byte 3 is 'g')")},
		{"length past the end", [][]any{{add, "*1\r\n$999\r\nFLUSHALL\r\n+00000000\r\n", add}},
			at("corrupt record: its lengths run past the end of the file, but a complete record follows at offset 86")},
		{"torn length", [][]any{{add, "*1\r\n$1x"}}, at(`corrupt record: malformed length line "$1x"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newPServer(t, Config{Dir: writeLogs(t, tc.logs...)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// failFile is an aofFile that fails on demand; a failing write writes
// half of its bytes first.
type failFile struct {
	aofFile
	failWrite, failSync atomic.Bool
}

var errInjected = errors.New("injected I/O error")

func (f *failFile) Write(b []byte) (int, error) {
	if f.failWrite.Load() {
		n, _ := f.aofFile.Write(b[:len(b)/2])
		return n, errInjected
	}
	return f.aofFile.Write(b)
}

func (f *failFile) Sync() error {
	if f.failSync.Load() {
		return errInjected
	}
	return f.aofFile.Sync()
}

// injectFailures puts a failFile under p.
func injectFailures(p *persistence) *failFile {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	ff := &failFile{aofFile: p.file}
	p.file = ff
	return ff
}

// openTestPersistence opens a memstore with persistence on dir.
func openTestPersistence(t testing.TB, dir, policy string) (*memstore, *persistence) {
	t.Helper()
	return openTestPersistenceWith(t, Config{Dir: dir, AppendFsync: policy})
}

// openTestPersistenceWith opens a memstore with persistence as cfg says.
func openTestPersistenceWith(t testing.TB, cfg Config) (*memstore, *persistence) {
	t.Helper()
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m, p, err := loadMemory(cfg, testCommands(), slog.New(slog.DiscardHandler), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	return m, p
}

func infoValue(p *persistence, name string) string {
	for _, f := range p.info() {
		if f.name == name {
			return f.value
		}
	}
	return ""
}

// A failed write or fsync fails the waits (nothing is acknowledged) until
// a retry succeeds; the retried bytes reach the log once, whole.
func TestPersistWriteFailures(t *testing.T) {
	for _, policy := range []string{"always", "everysec", "no"} {
		t.Run(policy, func(t *testing.T) {
			dir := t.TempDir()
			m, p := openTestPersistence(t, dir, policy)
			ctx := context.Background()
			add := func(item string) {
				if _, err := m.Add(ctx, "k", [][]byte{[]byte(item)}, &defaultCreate, make([]addResult, 1)); err != nil {
					t.Fatal(err)
				}
			}
			add("ok")
			if err := p.waitDurable(); err != nil {
				t.Fatal(err)
			}
			ff := injectFailures(p)
			for i, fail := range []*atomic.Bool{&ff.failWrite, &ff.failSync} {
				fail.Store(true)
				add(fmt.Sprint("failed", i))
				err := p.waitDurable()
				if fail == &ff.failSync && policy != "always" && err == nil {
					// Only the flusher fsyncs (unless it ran just now, and
					// failed the wait); its failure fails later waits.
					p.wmu.Lock()
					err = p.flushLocked(true)
					p.wmu.Unlock()
				}
				if !errors.Is(err, errInjected) {
					t.Fatalf("failure %d: %v", i, err)
				}
				if err := p.waitDurable(); !errors.Is(err, errInjected) {
					t.Fatalf("failure %d: the next wait: %v", i, err)
				}
				if infoValue(p, "aof_last_write_ok") != "0" || infoValue(p, "aof_last_write_status") != "err" {
					t.Fatalf("info: %v", p.info())
				}
				fail.Store(false)
				if err := p.waitDurable(); err != nil {
					t.Fatalf("after the failure: %v", err)
				}
				if infoValue(p, "aof_last_write_ok") != "1" {
					t.Fatalf("info: %v", p.info())
				}
			}
			add("after")
			if err := p.waitDurable(); err != nil {
				t.Fatal(err)
			}
			recs := logRecords(t, filepath.Join(dir, "appendonly.1.aof"))
			if len(recs) != 5 { // 4 records and the end
				t.Fatalf("log records at %v, want 4", recs)
			}
			p.close()
			m2, p2 := openTestPersistence(t, dir, policy)
			defer p2.close()
			if n, _ := m2.Card(ctx, "k"); n != 4 {
				t.Fatalf("BF.CARD after restart = %d, want 4", n)
			}
		})
	}
}

// Through a server: a write whose log write fails gets no reply.
func TestPersistWriteFailureNoReply(t *testing.T) {
	ps := startPServer(t, Config{Dir: t.TempDir(), AppendFsync: "always"})
	ps.do(t, "BF.ADD", "k", "a")
	ff := injectFailures(ps.srv.persist)
	ff.failSync.Store(true)
	if v, err := ps.rdb.Do(context.Background(), "BF.ADD", "k", "b").Result(); err == nil {
		t.Fatalf("BF.ADD acknowledged (%v) although fsync failed", v)
	}
	if got := ps.info(t)["aof_last_write_status"]; got != "err" {
		t.Fatalf("aof_last_write_status = %q", got)
	}
	ff.failSync.Store(false)
	ps.do(t, "BF.ADD", "k", "c")
	if got := ps.info(t)["aof_last_write_ok"]; got != "1" {
		t.Fatalf("aof_last_write_ok = %q", got)
	}
}

// With everysec, writing past kickUnsynced asks the flusher for an fsync,
// and writers that run maxUnsynced ahead of the fsyncs make one
// themselves (aof_sync.go); when that fsync fails, the bytes since the
// last good fsync are written again, once.
func TestPersistEarlyFsyncFailure(t *testing.T) {
	dir := t.TempDir()
	_, p := openTestPersistence(t, dir, "everysec")
	defer p.close()
	ff := injectFailures(p)
	big := make([]byte, 64<<10)
	n, failed := 0, false
	for !failed {
		if n > maxUnsynced/len(big) {
			t.Fatal("no early fsync")
		}
		ff.failSync.Store(true)
		p.append([]byte("DEL"), big, []byte(fmt.Sprint(n)))
		n++
		failed = p.waitDurable() != nil
	}
	ff.failSync.Store(false)
	if err := p.waitDurable(); err != nil {
		t.Fatal(err)
	}
	if got := len(logRecords(t, filepath.Join(dir, logName(1)))) - 1; got != n {
		t.Fatalf("%d records appended, %d in the log", n, got)
	}
}

// failTruncate also fails truncations.
type failTruncate struct{ *failFile }

func (f failTruncate) Truncate(int64) error { return errInjected }

// A partial write that cannot be truncated stays in the log; if a later
// fsync fails and the file can be truncated then, the whole of it is
// written again: the log never holds half a record.
func TestPersistPartialWriteThenFsyncFailure(t *testing.T) {
	dir := t.TempDir()
	m, p := openTestPersistence(t, dir, "always")
	ff := injectFailures(p)
	p.wmu.Lock()
	p.file = failTruncate{ff}
	p.wmu.Unlock()
	ff.failWrite.Store(true)
	mustAdd(t, m, "k", "a")
	if err := p.waitDurable(); !errors.Is(err, errInjected) {
		t.Fatalf("write: %v", err)
	}
	p.wmu.Lock()
	p.file = ff // truncation works again
	p.wmu.Unlock()
	ff.failWrite.Store(false)
	ff.failSync.Store(true)
	if err := p.waitDurable(); !errors.Is(err, errInjected) {
		t.Fatalf("fsync: %v", err)
	}
	ff.failSync.Store(false)
	if err := p.waitDurable(); err != nil {
		t.Fatal(err)
	}
	if got := len(logRecords(t, filepath.Join(dir, logName(1)))) - 1; got != 1 {
		t.Fatalf("%d records in the log, want 1", got)
	}
	p.close()
}

// TestRewriteDue: an automatic snapshot is due when the snapshot plus
// the log has grown by the percentage since the snapshot, as Redis's
// auto-aof-rewrite (the snapshot standing for the AOF's base), not every
// time the log alone passes the minimum. The snapshot counts by its
// weight (snapshot_shapes.go); its file, smaller, does not count.
func TestRewriteDue(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		snap, base, log int64
		want            bool
	}{
		{0, 0, 63 * mib, false}, // below the minimum
		{0, 0, 65 * mib, true},  // no snapshot yet: the log alone
		{1024 * mib, 0, 65 * mib, false},
		{1024 * mib, 0, 1000 * mib, false},
		{1024 * mib, 0, 1025 * mib, true},
		{10 * mib, 0, 55 * mib, true},           // past the minimum and 100%
		{10 * mib, 30 * mib, 60 * mib, false},   // 40 → 70: 75%
		{100 * mib, 100 * mib, 301 * mib, true}, // 200 → 401: over 100%
	}
	for _, c := range cases {
		p := &persistence{rewriteMin: 64 * mib, rewritePct: 100, snapSize: c.snap / 2, snapWeight: c.snap, baseSize: c.base, logSize: c.log}
		if got := p.rewriteDue(); got != c.want {
			t.Errorf("snapshot %d MiB, log %d MiB after it (%d MiB at the snapshot): due %v, want %v",
				c.snap/mib, c.log/mib, c.base/mib, got, c.want)
		}
	}
}
