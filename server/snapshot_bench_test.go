package server

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/bloomery/bloom"
)

// BenchmarkSnapshot: a whole snapshot (cut, copy, encode, fsync, rename)
// of many small filters or one large one; pause-µs is how long the keys
// were locked for the cut. The small filters are restored ones (a
// snapshot's or a dump's load: key, entry, filter and bits apart);
// BenchmarkSnapshotAdded has them made by BF.ADD instead.
func BenchmarkSnapshot(b *testing.B) {
	for _, tc := range []struct {
		keys     int
		capacity uint64
	}{{100_000, 100}, {1_000_000, 100}, {1, 10_000_000}} {
		b.Run(fmt.Sprintf("keys=%d,capacity=%d", tc.keys, tc.capacity), func(b *testing.B) {
			m, p := openTestPersistence(b, b.TempDir(), "everysec")
			defer p.close()
			f, err := bloom.NewScalable(tc.capacity, 0.01, bloom.WithGrowth(defaultCreate.growth()))
			if err != nil {
				b.Fatal(err)
			}
			for i := range tc.keys {
				m.restore(fmt.Sprint("key:", i), f.Clone(), 0)
			}
			benchSnapshots(b, p)
		})
	}
}

// benchSnapshots takes snapshots of p's keyspace in b's loop, and reports
// their size and the cut's pause.
func benchSnapshots(b *testing.B, p *persistence) {
	var pause time.Duration
	var size int64
	for b.Loop() {
		c, pa, err := p.takeCut(false)
		if err != nil {
			b.Fatal(err)
		}
		if size, _, err = p.writeSnapshot(c); err != nil {
			b.Fatal(err)
		}
		p.endCut()
		pause += pa
	}
	b.SetBytes(size)
	b.ReportMetric(float64(pause.Microseconds())/float64(b.N), "pause-µs")
}

// BenchmarkSnapshotAdded is BenchmarkSnapshot of a million keys made as
// BF.ADD makes them (one value holding entry, filter, bits and key;
// keyspace_value.go), one item each.
func BenchmarkSnapshotAdded(b *testing.B) {
	p := addedKeys(b)
	defer p.close()
	benchSnapshots(b, p)
}

// BenchmarkSnapshotRestarted is BenchmarkSnapshotAdded after a restart:
// the keys loaded from the snapshot the shutdown wrote.
func BenchmarkSnapshotRestarted(b *testing.B) {
	p := addedKeys(b)
	p.close()
	_, p = openTestPersistence(b, p.dir, "no")
	defer p.close()
	p.mu.Lock()
	p.rewriteMin = 1 << 62
	p.mu.Unlock()
	benchSnapshots(b, p)
}

// BenchmarkSnapshotLoad loads the snapshot of BenchmarkSnapshotAdded's
// keys, as a restart does, and reports what a full collection then
// costs with the loaded keys alive (gc-ms), outside the timing.
func BenchmarkSnapshotLoad(b *testing.B) {
	p := addedKeys(b)
	defer p.close()
	if err := p.save(); err != nil {
		b.Fatal(err)
	}
	gen := p.snapGen.Load()
	b.ReportAllocs()
	var gc time.Duration
	for b.Loop() {
		lm := newLoadingMemstore(0)
		if got, err := p.loadSnapshot(gen, newReplayer(lm, testCommands())); err != nil || got.keys != 1_000_000 {
			b.Fatalf("loaded %d keys: %v", got.keys, err)
		}
		b.StopTimer()
		runtime.GC()
		start := time.Now()
		runtime.GC()
		gc += time.Since(start)
		runtime.KeepAlive(lm)
		b.StartTimer()
	}
	b.ReportMetric(float64(gc.Milliseconds())/float64(b.N), "gc-ms")
}

// addedKeys is a persistence (fsync no, no automatic snapshots) of a
// million keys made by BF.ADD, one item each; the caller closes it.
func addedKeys(b *testing.B) *persistence {
	m, p := openTestPersistence(b, b.TempDir(), "no")
	p.mu.Lock()
	p.rewriteMin = 1 << 62 // no automatic snapshot beside the benchmark's
	p.mu.Unlock()
	res := make([]addResult, 1)
	for i := range 1_000_000 {
		key := fmt.Sprint("key:", i)
		if _, err := m.Add(context.Background(), key, [][]byte{[]byte(key)}, &defaultCreate, res); err != nil {
			b.Fatal(err)
		}
	}
	return p
}
