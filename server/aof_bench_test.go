package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// discardFile is an aofFile that keeps nothing.
type discardFile struct{}

func (discardFile) Write(b []byte) (int, error) { return len(b), nil }
func (discardFile) Sync() error                 { return nil }
func (discardFile) Truncate(int64) error        { return nil }
func (discardFile) Allocate(int64, int64) error { return errNoPrealloc }
func (discardFile) Close() error                { return nil }

// memPersistence is a persistence writing to discardFile: the append
// path without I/O.
func memPersistence() *persistence {
	p := &persistence{ks: newKeyspace(time.Now), policy: fsyncNo, file: discardFile{}, rewriteMin: 1 << 62,
		rewritePct: 100, rewriteCh: make(chan struct{}, 1), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	p.writeOK.Store(true)
	p.gcond.L = &p.gmu
	return p
}

// addArgs is the record of a BF.ADD of a 16-byte item to an existing key.
var addArgs = [][]byte{[]byte("BF.INSERT"), []byte("user:1234:seen"), []byte("NOCREATE"), []byte("ITEMS"), []byte("item-0123456789a")}

// append must not allocate once its buffers have grown.
func TestAppendAllocs(t *testing.T) {
	p := memPersistence()
	for range 100 {
		p.append(addArgs...)
	}
	p.waitDurable()
	allocs := testing.AllocsPerRun(1000, func() {
		for range 10 {
			p.append(addArgs...)
		}
		p.waitDurable()
	})
	if allocs != 0 {
		t.Fatalf("append and write: %v allocations per run", allocs)
	}
}

// BenchmarkAppend: journaling one change (the call made under the key's
// lock), with a write to the (discarding) file every 100 appends.
func BenchmarkAppend(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		p := memPersistence()
		b.SetBytes(int64(len(appendRecord(nil, addArgs))))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			p.append(addArgs...)
			if i%100 == 99 {
				p.waitDurable()
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		p := memPersistence()
		b.SetBytes(int64(len(appendRecord(nil, addArgs))))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				p.append(addArgs...)
				if i%100 == 99 {
					p.waitDurable()
				}
			}
		})
	})
}

// BenchmarkGroupCommit: with appendfsync always, goroutines (connections)
// each append a change and wait until it is on disk; fsyncs/op below 1
// is the group commit at work.
func BenchmarkGroupCommit(b *testing.B) {
	for _, par := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("waiters=%dxGOMAXPROCS", par), func(b *testing.B) {
			_, p := openTestPersistence(b, b.TempDir(), "always")
			defer p.close()
			start := p.fsyncs.Load()
			b.SetParallelism(par)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p.append(addArgs...)
					if err := p.waitDurable(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			fsyncs := float64(p.fsyncs.Load() - start)
			b.ReportMetric(fsyncs/float64(b.N), "fsyncs/op")
			b.ReportMetric(float64(b.N)/fsyncs, "changes/fsync")
		})
	}
}

// BenchmarkServeBFAdd: BF.ADD of new items through go-redis from 16
// connections per GOMAXPROCS, per fsync policy and without a data
// directory: the cost of durability end to end.
func BenchmarkServeBFAdd(b *testing.B) {
	for _, policy := range []string{"always", "everysec", "no", "nodir"} {
		b.Run(policy, func(b *testing.B) {
			cfg := Config{Dir: b.TempDir(), AppendFsync: policy}
			if policy == "nodir" {
				cfg = Config{Dir: "-"}
			}
			ps := startPServer(b, cfg)
			ps.rdb.Close()
			ps.rdb = redis.NewClient(&redis.Options{Addr: ps.addr, Protocol: 2, PoolSize: 1024})
			ctx := context.Background()
			for k := range 16 {
				ps.do(b, "BF.RESERVE", "k"+strconv.Itoa(k), "0.01", "10000000")
			}
			var next atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					if err := ps.rdb.Do(ctx, "BF.ADD", "k"+strconv.Itoa(int(i%16)), i).Err(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
