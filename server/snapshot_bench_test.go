package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/bloomery/bloom"
)

// BenchmarkSnapshot: a whole snapshot (cut, copy, encode, fsync, rename)
// of many small filters or one large one; pause-µs is how long the keys
// were locked for the cut.
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
			var pause time.Duration
			var size int64
			for b.Loop() {
				c, pa, err := p.takeCut(false)
				if err != nil {
					b.Fatal(err)
				}
				if size, err = p.writeSnapshot(c); err != nil {
					b.Fatal(err)
				}
				p.endCut()
				pause += pa
			}
			b.SetBytes(size)
			b.ReportMetric(float64(pause.Microseconds())/float64(b.N), "pause-µs")
		})
	}
}
