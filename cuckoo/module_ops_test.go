package cuckoo

import (
	"bytes"
	"slices"
	"testing"
)

// Random runs of CF.ADD, CF.ADDNX, CF.DEL, CF.COUNT, CF.EXISTS and
// CF.COMPACT answer the same here and in RedisBloom, reply for reply,
// and leave the same CF.INFO and the same dump, byte for byte.
func TestRandomRunsMatchRedisBloom(t *testing.T) {
	m := startRedisBloom(t)
	for seed := range uint64(opsRuns) {
		run := makeRun(seed)
		key := "cf" + run.String()
		m.do(t, "CF.RESERVE", key, run.capacity, "BUCKETSIZE", run.bucketSize, "MAXITERATIONS", run.maxIterations, "EXPANSION", run.expansion)
		cmds := make([][]any, 0, len(run.cmds)+1)
		for _, c := range run.cmds {
			args := []any{c[0], key}
			for _, a := range c[1:] {
				args = append(args, a)
			}
			cmds = append(cmds, args)
		}
		cmds = append(cmds, []any{"CF.COMPACT", key})
		want := m.pipe(t, cmds)
		got, f, err := run.play()
		if err != nil {
			t.Fatalf("%v: %v", run, err)
		}
		if i := firstDiff(got, want[:len(run.cmds)]); i >= 0 {
			t.Fatalf("%v: command %d %v answers %q, RedisBloom %q", run, i, run.cmds[i], got[i], want[i])
		}
		if g, w := f.Info(), m.info(t, key); g != w {
			t.Fatalf("%v: Info %+v, RedisBloom %+v", run, g, w)
		}
		if g, w := scanDump(f), m.scanDump(t, key); !sameDump(g, w) {
			t.Fatalf("%v: dump differs from RedisBloom's (%d and %d chunks)", run, len(g), len(w))
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func sameDump(a, b []rbChunk) bool {
	return slices.EqualFunc(a, b, func(x, y rbChunk) bool { return x.it == y.it && bytes.Equal(x.data, y.data) })
}
