package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom"
)

// captureJournal records the journaled commands.
type captureJournal struct{ cmds [][][]byte }

func (j *captureJournal) appendAdd(cmd, key, item []byte) { j.append(cmd, key, item) }

// appendAdds records the adds as the log frames them alone: the short
// record for one, a BF.INSERT for more.
func (j *captureJournal) appendAdds(cmd, key []byte, items [][]byte) {
	if len(items) == 1 {
		j.append(cmd, key, items[0])
		return
	}
	_, long := addWords(cmd)
	j.append(append([][]byte{long, key, wordNoCreate, wordItems}, items...)...)
}

func (j *captureJournal) append(args ...[]byte) {
	c := make([][]byte, len(args))
	for i, a := range args {
		c[i] = slices.Clone(a)
	}
	j.cmds = append(j.cmds, c)
}

// TestReplayUnderLowerLimits: a log written under a larger per-filter
// limit does not load silently short under a smaller one: replay fails
// with errNoMemory (startup then stops and says so). The total limit
// (maxMemory) is not a loading store's, so the log loads whole under it,
// and holds once the store serves.
func TestReplayUnderLowerLimits(t *testing.T) {
	ctx := context.Background()
	big := newMemstore(0, 0)
	j := &captureJournal{}
	big.journal = j
	if err := big.Reserve(ctx, "f", createOpts{rate: 0.001, capacity: 1000, expansion: 2}); err != nil {
		t.Fatal(err)
	}
	items := make([][]byte, 5000) // grows to 3 sub-filters
	for i := range items {
		items[i] = fmt.Appendf(nil, "item:%d", i)
	}
	if _, err := big.Add(ctx, "f", items, nil, make([]addResult, len(items))); err != nil {
		t.Fatal(err)
	}
	want, _ := big.Info(ctx, "f")

	commands := testCommands()
	replayAll := func(m *memstore) error {
		r := newReplayer(m, commands)
		for _, cmd := range j.cmds {
			if err := r.apply(cmd); err != nil {
				return err
			}
		}
		return nil
	}
	if err := replayAll(newLoadingMemstore(4096)); !errors.Is(err, errNoMemory) {
		t.Fatalf("replay under a smaller per-filter limit: %v, want errNoMemory", err)
	}
	small := newLoadingMemstore(0)
	if err := replayAll(small); err != nil {
		t.Fatalf("replay: %v", err)
	}
	small.serve(8192, bloom.Blocked, time.Now) // total limit far below the filter's size
	got, err := small.Info(ctx, "f")
	if err != nil || got != want {
		t.Fatalf("after replay: %+v, %v; want %+v", got, err, want)
	}
	found := make([]bool, len(items))
	if err := small.Exists(ctx, "f", items, found); err != nil || slices.Contains(found, false) {
		t.Fatalf("an item was lost in replay (err %v)", err)
	}
	// Once loaded, the total limit applies: no new filter.
	if err := small.Reserve(ctx, "g", createOpts{rate: 0.001, capacity: 100000, expansion: 2}); err != errNoMemory {
		t.Fatalf("reserve beyond the limit: %v, want errNoMemory", err)
	}
}

// TestReplayMalformed: records that do not parse are errors, never
// panics (the command table's arity checks do not run in replay).
func TestReplayMalformed(t *testing.T) {
	commands := testCommands()
	for _, c := range []string{
		"BF.RESERVE", "BF.RESERVE k", "BF.RESERVE k 0.01", "BF.RESERVE k 0.01 100 a b c d",
		"BF.INSERT", "BF.INSERT k", "BF.INSERT k ITEMS", "BF.INSERT k FOO ITEMS a",
		"BF.LOADCHUNK k", "BF.LOADCHUNK k x y", "DEL", "RENAME a", "PEXPIREAT k", "PEXPIREAT k x",
		"PERSIST", "GET k", "BF.RESERVE k nope 100",
	} {
		r := newReplayer(newLoadingMemstore(0), commands)
		var args [][]byte
		for _, f := range strings.Fields(c) {
			args = append(args, []byte(f))
		}
		if err := r.apply(args); err == nil {
			t.Errorf("replay %q: no error", c)
		}
	}
	if err := newReplayer(newLoadingMemstore(0), commands).apply(nil); err == nil {
		t.Error("replay of an empty record: no error")
	}
}
