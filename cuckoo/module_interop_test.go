package cuckoo

import (
	"fmt"
	"strconv"
	"testing"
)

// A filter filled in RedisBloom, dumped with CF.SCANDUMP and loaded here
// answers Test and Count as RedisBloom answers CF.EXISTS and CF.COUNT, on
// every item and as many absent probes; and the reverse, a filter filled
// here and loaded into RedisBloom with CF.LOADCHUNK. With one sub-filter,
// and with 32 (the most CF.ADD allows). 10⁶ items: about 20 to 50 s on
// the shared machine without the race detector, minutes with it, so it
// runs in make test's race-free pass (make accuracy).
func TestNoRaceInteropWithRedisBloom(t *testing.T) {
	if raceEnabled {
		t.Skip("10⁶ items through the race detector take minutes: make accuracy runs this test without it")
	}
	m := startRedisBloom(t)
	n := 1_000_000
	for _, tt := range []struct {
		name     string
		capacity uint64
		filters  int
	}{
		{"one sub-filter", uint64(4 * n), 1},
		{"32 sub-filters", uint64(n / 40), 32},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ours := mustNew(t, tt.capacity)
			items := 0
			for ; tt.filters == 1 && items < n || ours.Filters() < tt.filters; items++ {
				if err := ours.AddString(strconv.Itoa(items)); err != nil {
					t.Fatal(err)
				}
			}
			if ours.Filters() != tt.filters {
				t.Fatalf("%d items made %d sub-filters, want %d", items, ours.Filters(), tt.filters)
			}
			t.Logf("%d items, %d sub-filters, %d absent probes", items, ours.Filters(), items)
			m.do(t, "FLUSHALL")
			m.do(t, "CF.RESERVE", "rb", tt.capacity)
			m.insert(t, "rb", items)
			dump := m.scanDump(t, "rb")
			if !sameDump(dump, scanDump(ours)) {
				t.Fatal("RedisBloom's dump differs from the same items added here")
			}
			loaded := mustLoadHeader(t, dump[0].data)
			for _, c := range dump[1:] {
				if err := loaded.LoadChunk(c.it, c.data); err != nil {
					t.Fatal(err)
				}
			}
			m.compare(t, "rb", loaded, 2*items)
			for _, c := range scanDump(ours) {
				m.do(t, "CF.LOADCHUNK", "ours", c.it, c.data)
			}
			if g, w := ours.Info(), m.info(t, "ours"); g != w {
				t.Fatalf("loaded into RedisBloom: CF.INFO %+v, here %+v", w, g)
			}
			m.compare(t, "ours", ours, 2*items)
		})
	}
}

// insert adds the items "0", "1", … up to n in key with CF.INSERT, in a
// pipeline of commands of 1000 items.
func (m *rbServer) insert(t *testing.T, key string, n int) {
	t.Helper()
	var cmds [][]any
	for lo := 0; lo < n; lo += 1000 {
		c := []any{"CF.INSERT", key, "NOCREATE", "ITEMS"}
		for i := lo; i < min(lo+1000, n); i++ {
			c = append(c, strconv.Itoa(i))
		}
		cmds = append(cmds, c)
	}
	for i, r := range m.pipe(t, cmds) {
		if r[0] != '[' {
			t.Fatalf("CF.INSERT #%d: %s", i, r)
		}
	}
}

// compare checks that CF.EXISTS and CF.COUNT of the items "0" … up to n
// in key answer as f.Test and f.Count do, in pipelines of CF.MEXISTS of
// 1000 items and of 10000 CF.COUNTs.
func (m *rbServer) compare(t *testing.T, key string, f *Filter, n int) {
	t.Helper()
	var exists, counts [][]any
	var want, wantCounts []string
	for lo := 0; lo < n; lo += 1000 {
		c := []any{"CF.MEXISTS", key}
		var w []int64
		for i := lo; i < min(lo+1000, n); i++ {
			c = append(c, strconv.Itoa(i))
			if f.TestString(strconv.Itoa(i)) {
				w = append(w, 1)
			} else {
				w = append(w, 0)
			}
		}
		exists = append(exists, c)
		want = append(want, fmt.Sprint(w))
	}
	for i := range n {
		counts = append(counts, []any{"CF.COUNT", key, strconv.Itoa(i)})
		wantCounts = append(wantCounts, strconv.FormatUint(f.CountString(strconv.Itoa(i)), 10))
	}
	if i := firstDiff(m.pipe(t, exists), want); i >= 0 {
		t.Fatalf("CF.MEXISTS of items %d to %d differs from Test", 1000*i, 1000*i+999)
	}
	for lo := 0; lo < n; lo += 10000 {
		hi := min(lo+10000, n)
		if i := firstDiff(m.pipe(t, counts[lo:hi]), wantCounts[lo:hi]); i >= 0 {
			t.Fatalf("CF.COUNT of item %d differs from Count (%s)", lo+i, wantCounts[lo+i])
		}
	}
}
