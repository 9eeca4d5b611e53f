package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// captureJournal records the journaled commands.
type captureJournal struct{ cmds [][][]byte }

func (j *captureJournal) append(args ...[]byte) {
	c := make([][]byte, len(args))
	for i, a := range args {
		c[i] = slices.Clone(a)
	}
	j.cmds = append(j.cmds, c)
}

// TestReplayUnderLowerLimits: a log written under larger limits loads
// whole into a server started with smaller ones (nothing dropped), and
// the smaller limits hold again once loading is over.
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
	if _, err := big.Add(ctx, "f", items, nil, make([]bool, len(items))); err != nil {
		t.Fatal(err)
	}
	want, _ := big.Info(ctx, "f")

	small := newMemstore(4096, 8192) // far below the filter's size
	small.limitless = true
	for _, cmd := range j.cmds {
		if err := small.replay(cmd); err != nil {
			t.Fatalf("replay %s: %v", cmd[0], err)
		}
	}
	small.limitless = false
	got, err := small.Info(ctx, "f")
	if err != nil || got != want {
		t.Fatalf("after replay: %+v, %v; want %+v", got, err, want)
	}
	found := make([]bool, len(items))
	if err := small.Exists(ctx, "f", items, found); err != nil || slices.Contains(found, false) {
		t.Fatalf("an item was lost in replay (err %v)", err)
	}
	// Now the limits apply: no new filter, no growth.
	if err := small.Reserve(ctx, "g", createOpts{rate: 0.001, capacity: 100000, expansion: 2}); err != errNoMemory {
		t.Fatalf("reserve beyond the limit: %v, want errNoMemory", err)
	}
	more := make([][]byte, 20000)
	for i := range more {
		more[i] = fmt.Appendf(nil, "more:%d", i)
	}
	n, err := small.Add(ctx, "f", more, nil, make([]bool, len(more)))
	if err != errNoMemory || n == len(more) {
		t.Fatalf("growth beyond the limit: %d added, %v; want errNoMemory", n, err)
	}
}

// TestReplayMalformed: records that do not parse are errors, never
// panics (the command table's arity checks do not run in replay).
func TestReplayMalformed(t *testing.T) {
	for _, c := range []string{
		"BF.RESERVE", "BF.RESERVE k", "BF.RESERVE k 0.01", "BF.RESERVE k 0.01 100 a b c d",
		"BF.INSERT", "BF.INSERT k", "BF.INSERT k ITEMS", "BF.INSERT k FOO ITEMS a",
		"BF.LOADCHUNK k", "BF.LOADCHUNK k x y", "DEL", "RENAME a", "PEXPIREAT k", "PEXPIREAT k x",
		"PERSIST", "GET k", "BF.RESERVE k nope 100",
	} {
		m := newMemstore(0, 0)
		var args [][]byte
		for _, f := range strings.Fields(c) {
			args = append(args, []byte(f))
		}
		if err := m.replay(args); err == nil {
			t.Errorf("replay %q: no error", c)
		}
	}
	if err := newMemstore(0, 0).replay(nil); err == nil {
		t.Error("replay of an empty record: no error")
	}
}
