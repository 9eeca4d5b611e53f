package interop

import (
	"context"
	"fmt"
	"testing"

	"github.com/bloomery/bloom/redisfilter"
	"github.com/zeromicro/go-zero/core/bloom"
)

// Two fills: 10 bits per item, where about 2% of absent probes are
// positive, so the answers are compared on positives too; and go-zero's
// recommended 20 bits per item.
var fills = []struct {
	name string
	n    int
	bits uint64
}{
	{"10-bits-per-item", 2_000, 20_000},
	{"20-bits-per-item", 5_000, 100_000},
}

const probes = 10_000

// TestGoZeroWritesBloomeryReads: items added by go-zero are all found by
// GoZeroFilter, single and batched; on absent probes both answer alike;
// GoZeroFilter.AddMany of the same items writes the same bytes.
func TestGoZeroWritesBloomeryReads(t *testing.T) {
	ctx := context.Background()
	c, z := clients(t)
	for _, fill := range fills {
		t.Run(fill.name, func(t *testing.T) {
			key := "from-go-zero-" + fill.name
			gz := bloom.New(z, key, uint(fill.bits))
			in := items("in", 0, fill.n)
			for _, it := range in {
				if err := gz.AddCtx(ctx, it); err != nil {
					t.Fatal(err)
				}
			}
			f, err := redisfilter.OpenGoZero(c, key, fill.bits)
			if err != nil {
				t.Fatal(err)
			}
			allFound(t, ctx, f, in)
			agree(t, ctx, f, gz, fill.bits/uint64(fill.n))

			ours, _ := redisfilter.OpenGoZero(c, key+"-ours", fill.bits)
			if _, err := ours.AddMany(ctx, in); err != nil {
				t.Fatal(err)
			}
			if c.Get(ctx, key).Val() != c.Get(ctx, key+"-ours").Val() {
				t.Fatal("go-zero's Add and our AddMany wrote different bytes")
			}
		})
	}
}

// TestBloomeryWritesGoZeroReads: items added by GoZeroFilter, half with
// Add and half with AddMany, are all found by go-zero; on absent probes
// both answer alike.
func TestBloomeryWritesGoZeroReads(t *testing.T) {
	ctx := context.Background()
	c, z := clients(t)
	for _, fill := range fills {
		t.Run(fill.name, func(t *testing.T) {
			key := "from-bloomery-" + fill.name
			f, err := redisfilter.OpenGoZero(c, key, fill.bits)
			if err != nil {
				t.Fatal(err)
			}
			single, batch := items("one", 0, fill.n/2), items("many", 0, fill.n/2)
			for _, it := range single {
				if _, err := f.Add(ctx, it); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.AddMany(ctx, batch); err != nil {
				t.Fatal(err)
			}
			gz := bloom.New(z, key, uint(fill.bits))
			for _, it := range append(single, batch...) {
				ok, err := gz.ExistsCtx(ctx, it)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					t.Fatalf("go-zero does not find %q", it)
				}
			}
			allFound(t, ctx, f, append(single, batch...))
			agree(t, ctx, f, gz, fill.bits/uint64(fill.n))
		})
	}
}

func allFound(t *testing.T, ctx context.Context, f *redisfilter.GoZeroFilter, in [][]byte) {
	t.Helper()
	for _, it := range in {
		if ok, err := f.Exists(ctx, it); err != nil || !ok {
			t.Fatalf("Exists(%q) = %v, %v", it, ok, err)
		}
	}
	ex, err := f.ExistsMany(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range ex {
		if !ok {
			t.Fatalf("ExistsMany misses %q", in[i])
		}
	}
}

// agree checks that go-zero's Exists, GoZeroFilter.Exists and
// ExistsMany give identical answers on probes absent items.
func agree(t *testing.T, ctx context.Context, f *redisfilter.GoZeroFilter, gz *bloom.Filter, bitsPerItem uint64) {
	t.Helper()
	out := items("absent", 0, probes)
	many, err := f.ExistsMany(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	positive := 0
	for i, it := range out {
		want, err := gz.ExistsCtx(ctx, it)
		if err != nil {
			t.Fatal(err)
		}
		one, err := f.Exists(ctx, it)
		if err != nil {
			t.Fatal(err)
		}
		if one != want || many[i] != want {
			t.Fatalf("%q: go-zero %v, Exists %v, ExistsMany %v", it, want, one, many[i])
		}
		if want {
			positive++
		}
	}
	t.Logf("%d of %d absent probes positive, identically", positive, probes)
	if bitsPerItem <= 10 && positive == 0 {
		t.Error("no false positives at 10 bits per item: the positive answers went untested")
	}
}

// BenchmarkGoZero compares, on one real local redis-server, go-zero's
// Add and Exists with GoZeroFilter's single calls and its batches of
// 1000, on the same filter (20 bits per item for 2^20 items). The
// items/s metric counts items, not calls.
func BenchmarkGoZero(b *testing.B) {
	ctx := context.Background()
	c, z := clients(b)
	const bits = 20 << 20
	const batch = 1000
	pool := items("item-", 0, 1<<20)
	gz := bloom.New(z, "bench", bits)
	f, _ := redisfilter.OpenGoZero(c, "bench", bits)
	single := func(op func(item []byte) error) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := op(pool[n%len(pool)]); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
		}
	}
	many := func(op func(items [][]byte) ([]bool, error)) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				from := n % (len(pool) - batch + 1)
				if _, err := op(pool[from : from+batch]); err != nil {
					b.Fatal(err)
				}
				n += batch
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
		}
	}
	b.Run("go-zero/Add", single(func(it []byte) error { return gz.AddCtx(ctx, it) }))
	b.Run("go-zero/Exists", single(func(it []byte) error { _, err := gz.ExistsCtx(ctx, it); return err }))
	b.Run("GoZeroFilter/Add", single(func(it []byte) error { _, err := f.Add(ctx, it); return err }))
	b.Run("GoZeroFilter/Exists", single(func(it []byte) error { _, err := f.Exists(ctx, it); return err }))
	b.Run(fmt.Sprintf("GoZeroFilter/AddMany-%d", batch), many(func(its [][]byte) ([]bool, error) { return f.AddMany(ctx, its) }))
	b.Run(fmt.Sprintf("GoZeroFilter/ExistsMany-%d", batch), many(func(its [][]byte) ([]bool, error) { return f.ExistsMany(ctx, its) }))
}
