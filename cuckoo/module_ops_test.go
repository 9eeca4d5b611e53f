package cuckoo

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var updateOps = flag.Bool("update", false, "with "+redisBloomEnv+": rewrite "+opsDigestsFile+" from RedisBloom's answers")

// Random runs of CF.ADD, CF.ADDNX, CF.DEL, CF.COUNT, CF.EXISTS and
// CF.COMPACT answer the same here and in RedisBloom, reply for reply,
// and leave the same CF.INFO and the same dump, byte for byte.
func TestRandomRunsMatchRedisBloom(t *testing.T) {
	m := startRedisBloom(t)
	recorded, err := readDigests()
	if err != nil && !*updateOps {
		t.Fatal(err)
	}
	var file strings.Builder
	file.WriteString("# seed, and a digest of RedisBloom's replies, CF.INFO and dump in that random run (ops_test.go)\n")
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
		info, dump := m.info(t, key), m.scanDump(t, key)
		if g := f.Info(); g != info {
			t.Fatalf("%v: Info %+v, RedisBloom %+v", run, g, info)
		}
		if g := scanDump(f); !sameDump(g, dump) {
			t.Fatalf("%v: dump differs from RedisBloom's (%d and %d chunks)", run, len(g), len(dump))
		}
		d := digest(want[:len(run.cmds)], info, dump)
		if !*updateOps && recorded[seed] != d {
			t.Errorf("%v: RedisBloom's digest %s, recorded %s: rerun with -update", run, d, recorded[seed])
		}
		fmt.Fprintf(&file, "%d %s\n", seed, d)
	}
	if *updateOps {
		if err := os.WriteFile(opsDigestsFile, []byte(file.String()), 0o644); err != nil {
			t.Fatal(err)
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
