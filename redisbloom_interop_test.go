package bloom

import (
	"maps"
	"slices"
	"testing"
)

// Filters move both ways between RedisBloom and Bloomery by
// BF.SCANDUMP/BF.LOADCHUNK chunks and answer alike afterwards: every item
// present, the same BF.INFO, the same answer for every other item (false
// positives included), and the same bytes when dumped again.

// rbNonMembers is how many never-added items each test compares.
const rbNonMembers = 20000

// TestRedisBloomModuleFromRedisBloom loads RedisBloom's dumps.
func TestRedisBloomModuleFromRedisBloom(t *testing.T) {
	m := startRedisBloom(t)
	for _, c := range rbCases {
		t.Run(c.String(), func(t *testing.T) {
			key := "from:" + c.String()
			m.do(t, append([]any{"BF.RESERVE", key}, c.reserveArgs()...)...)
			items := rbItems(key, 0, c.items)
			m.madd(t, key, items)
			dump := m.scanDump(t, key)
			s := loadDump(t, dump)
			for _, it := range items {
				if !s.TestString(it) {
					t.Fatalf("false negative after load: %q", it)
				}
			}
			m.sameAnswers(t, key, s)
			sameDump(t, "dumped back", dump, goDump(t, s))

			// Both grow alike from there.
			more := rbItems(key, c.items, c.items/2+10)
			m.madd(t, key, more)
			for _, it := range more {
				if _, err := s.AddString(it); err != nil && !(c.nonScaling && err == ErrFull) {
					t.Fatal(err)
				}
			}
			m.sameAnswers(t, key, s)
			sameDump(t, "after more adds", m.scanDump(t, key), goDump(t, s))
		})
	}
}

// TestRedisBloomModuleToRedisBloom loads Bloomery's dumps into RedisBloom.
func TestRedisBloomModuleToRedisBloom(t *testing.T) {
	m := startRedisBloom(t)
	for _, c := range rbCases {
		t.Run(c.String(), func(t *testing.T) {
			key, native := "to:"+c.String(), "native:"+c.String()
			s := c.newScalable(t)
			items := rbItems(key, 0, c.items)
			for _, it := range items {
				if _, err := s.AddString(it); err != nil {
					t.Fatal(err)
				}
			}
			dump := goDump(t, s)
			for _, ch := range dump {
				if got := m.do(t, "BF.LOADCHUNK", key, ch.it, ch.data); got != "OK" {
					t.Fatalf("BF.LOADCHUNK %d: %v", ch.it, got)
				}
			}
			if got := m.mexists(t, key, items); slices.Contains(got, false) {
				t.Fatalf("RedisBloom misses item %d of ours", slices.Index(got, false))
			}
			m.sameAnswers(t, key, s)
			sameDump(t, "dumped back by RedisBloom", dump, m.scanDump(t, key))

			// RedisBloom's own filter of the same items has the same bytes.
			m.do(t, append([]any{"BF.RESERVE", native}, c.reserveArgs()...)...)
			m.madd(t, native, items)
			sameDump(t, "RedisBloom's own filter", dump, m.scanDump(t, native))
		})
	}
}

// sameAnswers checks that RedisBloom's key and s have the same BF.INFO
// and answer alike for rbNonMembers items never added.
func (m *rbModule) sameAnswers(t *testing.T, key string, s *Scalable) {
	t.Helper()
	if got, want := goInfo(s), m.info(t, key); !maps.Equal(got, want) {
		t.Fatalf("BF.INFO: ours %v, RedisBloom's %v", got, want)
	}
	probes := rbItems("absent:"+key, 0, rbNonMembers)
	theirs, fp := m.mexists(t, key, probes), 0
	for i, it := range probes {
		if s.TestString(it) != theirs[i] {
			t.Fatalf("%q: ours %v, RedisBloom's %v", it, !theirs[i], theirs[i])
		}
		if theirs[i] {
			fp++
		}
	}
	t.Logf("%d of %d never-added items answer present in both", fp, len(probes))
}
