package server

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestMAddMatchesOneByOne: a BF.MADD of many items (whose items go
// through one Scalable.AddMany before the item-by-item path takes over
// at a refused item) answers element for element as the same items sent
// one per BF.MADD to a twin filter, up to the same stop (a full
// non-scaling filter, a growth past the per-filter limit) and through
// the refusals that do not stop it (RedisBloom's layout, whose rate
// halves with each growth until it can halve no more: "problem
// inserting"); and a server that replays the log from a copy of the
// directory (as a crash leaves it) has each filter with the bits and
// counts of its twin. In both layouts.
func TestMAddMatchesOneByOne(t *testing.T) {
	onePath(t) // what is tested is the store's, not how connections are served
	errNoMem := "-ERR Insufficient memory to create filter\r\n"
	for _, tc := range []struct {
		layout string
		keys   map[string][]string // BF.RESERVE's arguments after the key
		want   []string            // answers some item must get
	}{
		{LayoutBloomery, map[string][]string{
			"full":   {"0.01", "300", "NONSCALING"},
			"grow":   {"0.01", "50", "EXPANSION", "2"},
			"capped": {"0.01", "10", "EXPANSION", "64"},
		}, []string{":1\r\n", ":0\r\n", "-" + errFullText + "\r\n", errNoMem}},
		{LayoutRedisBloom, map[string][]string{
			"full":   {"0.01", "300", "NONSCALING"},
			"grow":   {"0.01", "50", "EXPANSION", "2"},
			"capped": {"0.01", "10", "EXPANSION", "64"},
			"tiny":   {"1e-300", "1", "EXPANSION", "1"},
		}, []string{":1\r\n", ":0\r\n", "-" + errFullText + "\r\n", errNoMem, "-" + string(errCannotInsert) + "\r\n"}},
	} {
		t.Run(tc.layout, func(t *testing.T) {
			ps := startPServer(t, Config{Dir: t.TempDir(), AppendFsync: "always", MaxFilterBytes: 32 << 10, FilterLayout: tc.layout})
			keys := []string{"new"} // created by the first BF.MADD
			for _, key := range slices.Sorted(maps.Keys(tc.keys)) {
				keys = append(keys, key)
				for _, prefix := range []string{"p:", "a:"} {
					args := []any{"BF.RESERVE", prefix + key}
					for _, a := range tc.keys[key] {
						args = append(args, a)
					}
					ps.do(t, args...)
				}
			}
			piped, alone := dialRaw(t, ps.addr), dialRaw(t, ps.addr)
			rng := rand.New(rand.NewPCG(1, 2))
			seen := map[string]int{}
			for cmd := range 800 {
				key := keys[cmd%len(keys)]
				items := make([]string, 1+rng.IntN(40))
				for i := range items {
					items[i] = strconv.Itoa(rng.IntN(3000)) // repeats: some items are present
				}
				got := piped.do(append([]string{"BF.MADD", "p:" + key}, items...)...)
				var want strings.Builder
				n := 0
				for _, item := range items {
					r := alone.do("BF.MADD", "a:"+key, item)
					elem, ok := strings.CutPrefix(r, "*1\r\n")
					if !ok {
						t.Fatalf("BF.MADD a:%s %s: %q, want one element", key, item, r)
					}
					want.WriteString(elem)
					n++
					seen[elem]++
					if strings.HasPrefix(elem, "-") && !strings.Contains(elem, string(errCannotInsert)) {
						break // an error that stops the command, as RedisBloom's do
					}
				}
				if w := fmt.Sprintf("*%d\r\n%s", n, want.String()); got != w {
					t.Fatalf("command %d, BF.MADD p:%s of %d items: %q; one by one: %q", cmd, key, len(items), got, w)
				}
			}
			for _, elem := range tc.want {
				if seen[elem] == 0 {
					t.Errorf("no item answered %q: the test missed a case (answers: %v)", elem, seen)
				}
			}
			replayMatches(t, ps, "BF.SCANDUMP", "BF.INFO", keys, "BF.MADD, "+tc.layout)
		})
	}
}
