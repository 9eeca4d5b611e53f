package server

import (
	"context"
	"runtime"
	"strconv"
	"testing"
)

// BenchmarkMemstoreNewKeys is the memory backend's part of BF.ADD on a
// new key, the workload of `redis-benchmark -r 100000000 BF.ADD
// key:__rand_int__ x`: the key missing, a filter made with BF.ADD's
// defaults, one item added, without journal or network (the key string
// is made per call, as a connection makes it). heap-B/key is the live
// heap a key takes at the end, the keyspace included.
func BenchmarkMemstoreNewKeys(b *testing.B) {
	m := newMemstore(0, 0)
	items := [][]byte{[]byte("x")}
	res := make([]addResult, 1)
	create := defaultCreate
	before := heapBytes()
	b.ReportAllocs()
	n := 0
	buf := []byte("key:")
	for b.Loop() {
		buf = strconv.AppendInt(buf[:4], 100_000_000_000+int64(n), 10)
		if _, err := m.Add(context.Background(), string(buf), items, &create, res); err != nil || res[0] != addNew {
			b.Fatalf("add %s: %v, %v", buf, res[0], err)
		}
		n++
	}
	b.ReportMetric(float64(heapBytes()-before)/float64(n), "heap-B/key")
	runtime.KeepAlive(m)
}
