package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom"
)

// logWords returns the records of the log file name, each as its words
// joined by spaces.
func logWords(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimRight(b, "\x00") // the room mapped appends claimed
	lr := newLogReader(bytes.NewReader(b), int64(len(b)))
	var out []string
	for {
		rec, err := lr.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, joinWords(rec))
	}
}

// replayed is a memstore loaded from the log file name alone.
func replayed(t *testing.T, name string) *memstore {
	t.Helper()
	m := newLoadingMemstore(0)
	r := newReplayer(m, testCommands())
	p := &persistence{ks: m.ks, log: slog.New(slog.DiscardHandler)}
	if _, err := p.replayLog(name, true, r); err != nil {
		t.Fatal(err)
	}
	m.serve(0, bloom.Blocked, time.Now)
	return m
}

// Adds of one item to one existing filter that follow each other in the
// log are one record, up to maxMerged items; any other record, or a
// writer taking the buffer, closes it; a lone add stays the short
// record. The log replays to the same filters.
func TestMergedAdds(t *testing.T) {
	m, p := openTestPersistence(t, t.TempDir(), "everysec")
	defer p.close()
	mustAdd(t, m, "b", "a")       // creates: BF.INSERT b ITEMS a
	mustAddCuckoo(t, m, "c", "a") // creates: CF.INSERT c CAPACITY 1024 ITEMS a
	var bItems []string
	for i := range maxMerged + 3 {
		it := fmt.Sprint("x", i)
		bItems = append(bItems, it)
		mustAdd(t, m, "b", it)
	}
	mustAdd(t, m, "b", "x0")       // not new: journals nothing, closes nothing
	mustAdd(t, m, "b", "y")        // extends the second record
	mustAddCuckoo(t, m, "c", "p")  // another filter: closes b's
	mustAddCuckoo(t, m, "c", "q")  // merged with p
	mustAdd(t, m, "b", "z1", "z2") // another filter: closes c's
	mustAddCuckoo(t, m, "c", "r")  // alone
	if pending := infoValue(p, "aof_pending_bytes"); pending == "0" {
		t.Fatal("nothing pending before the flush")
	}
	if err := p.waitDurable(); err != nil { // closes the open record
		t.Fatal(err)
	}
	if pending := infoValue(p, "aof_pending_bytes"); pending != "0" {
		t.Fatalf("aof_pending_bytes %s after the flush", pending)
	}
	mustAddCuckoo(t, m, "c", "s") // after a flush: a new record
	if err := p.waitDurable(); err != nil {
		t.Fatal(err)
	}

	want := []string{
		"BF.INSERT b ITEMS a",
		"CF.INSERT c CAPACITY 1024 ITEMS a",
		"BF.INSERT b NOCREATE ITEMS " + strings.Join(bItems[:maxMerged], " "),
		"BF.INSERT b NOCREATE ITEMS " + strings.Join(bItems[maxMerged:], " ") + " y",
		"CF.INSERT c NOCREATE ITEMS p q",
		"BF.INSERT b NOCREATE ITEMS z1 z2",
		"CF.ADD c r",
		"CF.ADD c s",
	}
	got := logWords(t, p.fileName)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := storeState(replayed(t, p.fileName)), storeState(m); got != want {
		t.Fatalf("replayed:\n%s\nwant:\n%s", got, want)
	}
}

// The new items of adds of several items (BF.MADD, BF.INSERT) to a
// filter that existed join the merged record in turn, next to single adds
// and up to maxMerged items, while the items already there journal
// nothing; the log replays to the same filter.
func TestMergedMultiAdds(t *testing.T) {
	m, p := openTestPersistence(t, t.TempDir(), "everysec")
	defer p.close()
	mustAdd(t, m, "b", "a")             // creates: BF.INSERT b ITEMS a
	mustAdd(t, m, "b", "x")             // BF.ADD b x, open
	mustAdd(t, m, "b", "y1", "a", "y2") // a is there: y1 y2 extend it
	var many []string
	for i := range maxMerged {
		many = append(many, fmt.Sprint("m", i))
	}
	mustAdd(t, m, "b", many...) // fills the record, opens the next
	if err := p.waitDurable(); err != nil {
		t.Fatal(err)
	}
	first := append([]string{"x", "y1", "y2"}, many[:maxMerged-3]...)
	want := []string{
		"BF.INSERT b ITEMS a",
		"BF.INSERT b NOCREATE ITEMS " + strings.Join(first, " "),
		"BF.INSERT b NOCREATE ITEMS " + strings.Join(many[maxMerged-3:], " "),
	}
	got := logWords(t, p.fileName)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := storeState(replayed(t, p.fileName)), storeState(m); got != want {
		t.Fatalf("replayed:\n%s\nwant:\n%s", got, want)
	}
}

// Random interleavings of adds to Bloom and cuckoo filters, other
// records and flushes: the log replays to the same state, and positions
// stay byte offsets (the file holds exactly the bytes written).
func TestMergedAddsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 20 {
		m, p := openTestPersistence(t, t.TempDir(), "everysec")
		start := p.written.Load()
		for _, k := range []string{"b1", "b2"} {
			mustAdd(t, m, k, "seed")
		}
		for _, k := range []string{"c1", "c2"} {
			mustAddCuckoo(t, m, k, "seed")
		}
		for i := range 2000 {
			it := fmt.Sprint("r", round, "-", i)
			switch rng.IntN(10) {
			case 0, 1, 2, 3:
				mustAdd(t, m, []string{"b1", "b2"}[rng.IntN(4)/3], it) // mostly b1: long runs
			case 4, 5, 6:
				mustAddCuckoo(t, m, []string{"c1", "c2"}[rng.IntN(4)/3], it)
			case 7:
				mustAdd(t, m, "b2", it, it+"+") // two items, merged in turn
			case 8:
				mustAdd(t, m, fmt.Sprint("n", i), it) // a new filter
			case 9:
				if err := p.waitDurable(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := p.waitDurable(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p.fileName)
		if err != nil {
			t.Fatal(err)
		}
		if n := int64(len(bytes.TrimRight(b, "\x00"))); n != p.written.Load()-start {
			t.Fatalf("round %d: the log holds %d bytes, positions say %d", round, n, p.written.Load()-start)
		}
		if got, want := storeState(replayed(t, p.fileName)), storeState(m); got != want {
			t.Fatalf("round %d: the replayed log differs", round)
		}
		p.close()
	}
}

// The sizes the docs give: sixteen CF.ADD cf <12 digits> merged are 368
// bytes, 54 each alone.
func TestMergedAddSize(t *testing.T) {
	var p persistence
	item := []byte("000012345678")
	p.merge(wordCFAdd, []byte("cf"), item)
	if p.open.size != 54 {
		t.Fatalf("one add: %d bytes, want 54", p.open.size)
	}
	for range 15 {
		p.merge(wordCFAdd, []byte("cf"), item)
	}
	p.closeOpen()
	if len(p.buf) != 368 {
		t.Fatalf("sixteen adds: %d bytes, want 368", len(p.buf))
	}
}
