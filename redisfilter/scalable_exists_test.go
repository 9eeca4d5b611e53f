package redisfilter

import (
	"context"
	"slices"
	"testing"

	"github.com/bloomery/bloom"
)

// TestNoRaceScalableExistsChains: for chains of several sub-filters of both
// layouts, ExistsMany answers as the in-memory bloom.Scalable fed the
// same items, over batches of several chunks with repeats, in one
// pipeline (one HMGET) per chunk, reading blocked sub-filters with
// GETRANGE only and classic ones with BITFIELD_RO only. A missing
// sub-filter reads as empty (the others still answer), and one of another
// type is an error.
func TestNoRaceScalableExistsChains(t *testing.T) {
	if raceEnabled {
		t.Skip("one goroutine against the in-memory filter, long under the race detector: the race-free pass (make accuracy) runs it")
	}
	ctx := context.Background()
	_, c := newClient(t)
	for _, tc := range []struct {
		layout    bloom.Layout
		read, not string
	}{
		{bloom.Blocked, "getrange", "bitfield_ro"},
		{bloom.Classic, "bitfield_ro", "getrange"},
	} {
		t.Run(tc.layout.String(), func(t *testing.T) {
			bopt := []bloom.Option{bloom.WithLayout(tc.layout)}
			s := mustCreateScalable(t, c, "chain-"+tc.layout.String(), 1000, 0.01, bloom.Growth{}, WithLayout(tc.layout))
			mem, err := bloom.NewScalable(1000, 0.01, bopt...)
			if err != nil {
				t.Fatal(err)
			}
			in := items("in", 0, 30_000)
			if _, err := s.AddMany(ctx, in); err != nil {
				t.Fatal(err)
			}
			for _, it := range in {
				mem.Add(it)
			}
			m := s.view()
			if len(m.subs) != 5 {
				t.Fatalf("%d sub-filters, want 5", len(m.subs))
			}
			probes := slices.Concat(in, items("out", 0, 10_000), in[:700])
			if n := chunkItems(m); len(probes) <= 3*n {
				t.Fatalf("%d probes for chunks of %d: want at least 4 chunks", len(probes), n)
			}
			before := commandCalls(t, c)
			checkSameAnswers(t, s, mem.Test, probes)
			after := commandCalls(t, c)
			chunks := (len(probes) + chunkItems(m) - 1) / chunkItems(m)
			if got := after["hmget"] - before["hmget"]; got != chunks {
				t.Errorf("%d pipelines (HMGET) for %d chunks", got, chunks)
			}
			if after[tc.read] == before[tc.read] || after[tc.not] != before[tc.not] {
				t.Errorf("%d %s, %d %s", after[tc.read]-before[tc.read], tc.read, after[tc.not]-before[tc.not], tc.not)
			}
			// Sub-filter 1 lost: the others answer.
			subs := memSubs(t, mem, bopt)
			c.Del(ctx, m.subKey(1))
			checkSameAnswers(t, s, func(it []byte) bool {
				return subs[0].Test(it) || subs[2].Test(it) || subs[3].Test(it) || subs[4].Test(it)
			}, probes)
			c.RPush(ctx, m.subKey(1), "x")
			if _, err := s.ExistsMany(ctx, probes[:10]); err == nil {
				t.Fatal("ExistsMany with a sub-filter that is a list: no error")
			}
		})
	}
}

// TestScalableExistsBlocks: a batch reads an item's block once per
// sub-filter however often it repeats, all sub-filters in one pipeline;
// a fresh chain (sub-filter 0 an empty string) answers absent.
func TestScalableExistsBlocks(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	s := mustCreateScalable(t, c, "blocks", 10, 0.01, bloom.Growth{UniformLayout: true}) // every sub-filter blocked, small ones too
	if got, err := s.ExistsMany(ctx, items("x", 0, 100)); err != nil || slices.Contains(got, true) {
		t.Fatalf("empty chain: %v, %v", got, err)
	}
	if _, err := s.AddMany(ctx, items("x", 0, 100)); err != nil {
		t.Fatal(err)
	}
	subs := len(s.view().subs)
	if subs < 3 {
		t.Fatalf("%d sub-filters", subs)
	}
	for _, tc := range []struct {
		name  string
		batch [][]byte
		want  int
	}{
		{"one item a thousand times", slices.Repeat([][]byte{[]byte("x7")}, 1000), subs},
		{"one item", [][]byte{[]byte("x8")}, subs},
		{"empty", nil, 0},
	} {
		before := commandCalls(t, c)
		got, err := s.ExistsMany(ctx, tc.batch)
		if err != nil || len(got) != len(tc.batch) || slices.Contains(got, false) {
			t.Fatalf("%s: %v, %v", tc.name, got, err)
		}
		after := commandCalls(t, c)
		if n := after["getrange"] - before["getrange"]; n != tc.want {
			t.Errorf("%s: %d GETRANGE, want %d (one per sub-filter)", tc.name, n, tc.want)
		}
		if n := after["hmget"] - before["hmget"]; n != min(1, tc.want) {
			t.Errorf("%s: %d pipelines", tc.name, n)
		}
	}
}
