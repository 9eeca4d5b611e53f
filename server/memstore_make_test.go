package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom"
)

// TestCreationRecords: the record that journals a filter made by an add
// names the creation options unless they are BF.INSERT's defaults, and
// replaying the records makes the same filters, bit for bit.
func TestCreationRecords(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		create createOpts
		want   string
	}{
		{"BF.ADD's defaults", defaultCreate, "BF.INSERT k ITEMS a b"},
		{"another capacity", createOpts{rate: 0.01, capacity: 500, expansion: 2}, "BF.INSERT k CAPACITY 500 ERROR 0.01 EXPANSION 2 ITEMS a b"},
		{"another rate", createOpts{rate: 0.001, capacity: 100, expansion: 2}, "BF.INSERT k CAPACITY 100 ERROR 0.001 EXPANSION 2 ITEMS a b"},
		{"non-scaling", createOpts{rate: 0.01, capacity: 100, nonScaling: true}, "BF.INSERT k CAPACITY 100 ERROR 0.01 NONSCALING ITEMS a b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemstore(0, 0)
			j := &captureJournal{}
			m.journal = j
			items := [][]byte{[]byte("a"), []byte("b")}
			if _, err := m.Add(ctx, "k", items, &tc.create, make([]addResult, 2)); err != nil {
				t.Fatal(err)
			}
			if len(j.cmds) != 1 || string(joinWords(j.cmds[0])) != tc.want {
				t.Fatalf("journaled %q, want %q", j.cmds, tc.want)
			}
			loaded := newLoadingMemstore(0)
			r := newReplayer(loaded, testCommands())
			if err := r.apply(j.cmds[0]); err != nil {
				t.Fatal(err)
			}
			loaded.serve(0, bloom.Blocked, time.Now)
			if got, want := dumpOf(t, loaded, "k"), dumpOf(t, m, "k"); got != want {
				t.Fatalf("replayed filter differs: %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

func joinWords(words [][]byte) string {
	s := make([]string, len(words))
	for i, w := range words {
		s[i] = string(w)
	}
	return strings.Join(s, " ")
}

// dumpOf is key's filter as BF.SCANDUMP gives it, all chunks.
func dumpOf(t *testing.T, m *memstore, key string) string {
	t.Helper()
	var b strings.Builder
	for it := int64(0); ; {
		next, chunk, err := m.ScanDump(context.Background(), key, it)
		if err != nil {
			t.Fatal(err)
		}
		if next == 0 {
			return b.String()
		}
		fmt.Fprintf(&b, "%d:%s|", next, chunk)
		it = next
	}
}
