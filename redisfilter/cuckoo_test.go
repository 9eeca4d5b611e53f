package redisfilter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bloomery/bloom/cuckoo"
	"github.com/redis/go-redis/v9"
)

// cuckooTwin is a Cuckoo and an in-memory cuckoo.Filter fed the same
// operations; check compares every answer and, at the end, the bytes.
type cuckooTwin struct {
	t   *testing.T
	ctx context.Context
	r   *Cuckoo
	m   *cuckoo.Filter
}

func newTwin(t *testing.T, client redis.UniversalClient, name string, capacity uint64, bs, mi, exp uint64, opts ...Option) *cuckooTwin {
	t.Helper()
	ctx := context.Background()
	opts = append(opts, WithBucketSize(bs), WithMaxIterations(mi), WithExpansion(exp), WithMaxBytes(1<<20))
	r, err := CreateCuckoo(ctx, client, name, capacity, opts...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cuckoo.New(capacity, cuckoo.WithBucketSize(bs), cuckoo.WithMaxIterations(mi), cuckoo.WithExpansion(exp), cuckoo.WithMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return &cuckooTwin{t: t, ctx: ctx, r: r, m: m}
}

// step applies one random operation on items to both and compares the
// answers.
func (w *cuckooTwin) step(rng *rand.Rand, items [][]byte) {
	t, ctx := w.t, w.ctx
	t.Helper()
	batch := make([][]byte, 1+rng.IntN(40))
	for i := range batch {
		batch[i] = items[rng.IntN(len(items))]
	}
	switch op := rng.IntN(10); {
	case op < 4:
		unique := op == 3
		got, err := w.r.Insert(ctx, batch, CuckooInsert{Unique: unique})
		var want []cuckoo.Status
		if unique {
			want = w.m.AddUniqueMany(batch, nil)
		} else {
			want = w.m.AddMany(batch, nil)
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Insert(unique %v) = %v, %v; in memory %v", unique, got, err, want)
		}
	case op < 7:
		got, err := w.r.DeleteMany(ctx, batch)
		for i, it := range batch {
			if want := w.m.Delete(it); err != nil || got[i] != want {
				t.Fatalf("DeleteMany[%d] = %v, %v; in memory %v", i, got, err, want)
			}
		}
	case op < 8:
		got, err := w.r.TestMany(ctx, batch)
		if want := w.m.TestMany(batch, nil); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("TestMany = %v, %v; in memory %v", got, err, want)
		}
	case op < 9:
		got, err := w.r.CountMany(ctx, batch)
		for i, it := range batch {
			if want := w.m.Count(it); err != nil || got[i] != want {
				t.Fatalf("CountMany[%d] = %v, %v; in memory %v", i, got, err, want)
			}
		}
	default:
		if rng.IntN(4) == 0 {
			if err := w.r.Compact(ctx); err != nil {
				t.Fatal(err)
			}
			w.m.Compact()
		}
	}
	if in, err := w.r.Info(ctx); err != nil || in != w.m.Info() {
		t.Fatalf("Info = %+v, %v; in memory %+v", in, err, w.m.Info())
	}
}

// sameBytes compares the full dumps, chunk by chunk, byte for byte.
func (w *cuckooTwin) sameBytes() {
	t := w.t
	t.Helper()
	for it := int64(0); ; {
		next, got, err := w.r.ScanDump(w.ctx, it)
		wantNext, want := w.m.ScanDump(it)
		if err != nil || next != wantNext || !bytes.Equal(got, want) {
			t.Fatalf("ScanDump(%d) = %d, %d bytes, %v; in memory %d, %d bytes", it, next, len(got), err, wantNext, len(want))
		}
		if next == 0 {
			break
		}
		it = next
	}
	d, err := w.r.Download(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if _, err := d.WriteTo(&a); err != nil {
		t.Fatal(err)
	}
	if _, err := w.m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("Download's encoding differs from the in-memory filter's (%d and %d bytes)", a.Len(), b.Len())
	}
}

// The same random operations (adds, unique adds, deletes of present and
// absent items, tests, counts, compactions) on a Cuckoo and a
// cuckoo.Filter give the same answers, the same Info after every step
// and the same bytes at the end, over geometries that grow (expansion 1,
// 2 and 4), do not grow (0), have buckets of 1 to 7 slots, few or many
// kicks, and pieces small enough that sub-filters span several.
func TestCuckooMatchesInMemoryByteForByte(t *testing.T) {
	_, client := newClient(t)
	runs := []struct {
		capacity, bs, mi, exp uint64
		shard                 uint64
	}{
		{8, 2, 20, 1, 64},
		{16, 4, 5, 2, 128},
		{6, 3, 1, 4, 64},
		{4, 1, 50, 2, 64},
		{32, 2, 20, 0, 64},
		{100, 7, 10, 1, DefaultShardBytes},
		{2, 1, 3, 1, 64},
	}
	for i, r := range runs {
		t.Run(fmt.Sprintf("c%d-bs%d-mi%d-exp%d", r.capacity, r.bs, r.mi, r.exp), func(t *testing.T) {
			w := newTwin(t, client, fmt.Sprintf("twin%d", i), r.capacity, r.bs, r.mi, r.exp, WithShardBytes(r.shard))
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			items := items("x", 0, 40+int(r.capacity))
			for range 150 {
				w.step(rng, items)
			}
			w.sameBytes()
			if in := w.m.Info(); r.exp != 0 && in.Filters < 2 && in.Deleted == 0 {
				t.Logf("run %d never grew: %+v", i, in)
			}
		})
	}
}

// A filter loaded from a dump with an expansion RedisBloom takes
// verbatim (3: sub-filters of 4, 12, 36 buckets, not powers of two) works
// in Redis as in memory: the scripts' modulo of 64-bit hashes by any
// bucket count is exact.
func TestCuckooOddExpansionFromDump(t *testing.T) {
	_, client := newClient(t)
	ctx := context.Background()
	m, err := cuckoo.LoadDumpHeader(cuckoo.Info{Buckets: 4, Filters: 3, BucketSize: 2, MaxIterations: 20, Expansion: 3}.DumpHeader())
	if err != nil {
		t.Fatal(err)
	}
	r, err := UploadCuckoo(ctx, client, "odd", m, WithShardBytes(64))
	if err != nil {
		t.Fatal(err)
	}
	w := &cuckooTwin{t: t, ctx: ctx, r: r, m: m}
	rng := rand.New(rand.NewPCG(3, 3))
	its := items("odd", 0, 300)
	for range 200 {
		w.step(rng, its)
	}
	if w.m.Filters() < 4 {
		t.Errorf("only %d sub-filters: the test did not grow past the dump's", w.m.Filters())
	}
	w.sameBytes()
}

// CreateCuckoo checks before it writes: invalid parameters, sizes past
// WithMaxBytes and an existing key are refused, and nothing is written.
func TestCreateCuckooRefuses(t *testing.T) {
	_, client := newClient(t)
	ctx := context.Background()
	if err := client.Set(ctx, "str", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateCuckoo(ctx, client, "cf", 100); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		capacity uint64
		opts     []Option
		want     error
	}{
		{"new", 1 << 60, nil, ErrTooLarge},
		{"new", 1 << 21, []Option{WithMaxBytes(1 << 20)}, ErrTooLarge},
		{"new", 3, nil, cuckoo.ErrInvalid},
		{"new", 100, []Option{WithBucketSize(256)}, cuckoo.ErrInvalid},
		{"cf", 100, nil, ErrExists},
		{"str", 100, nil, ErrMetadata},
	}
	for _, tt := range tests {
		if _, err := CreateCuckoo(ctx, client, tt.name, tt.capacity, tt.opts...); !errors.Is(err, tt.want) {
			t.Errorf("CreateCuckoo(%q, %d) = %v, want %v", tt.name, tt.capacity, err, tt.want)
		}
	}
	if n, err := client.DBSize(ctx).Result(); err != nil || n != 3 { // str, cf and its piece
		t.Errorf("%d keys after the refusals, want 3 (%v)", n, err)
	}
}

// Operations on a missing filter or a key of another kind fail with
// ErrNotFound or ErrMetadata; Insert with CreateCapacity makes a missing
// filter in the same call, and MaxFilters refuses the whole call.
func TestCuckooMissingWrongKindAndCreate(t *testing.T) {
	_, client := newClient(t)
	ctx := context.Background()
	client.Set(ctx, "str", "v", 0)
	if _, err := CreateScalable(ctx, client, "bf", 100, 0.01); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]error{"none": ErrNotFound, "str": ErrMetadata, "bf": ErrMetadata} {
		c, _ := CuckooAt(client, name)
		if _, err := c.Test(ctx, []byte("a")); !errors.Is(err, want) {
			t.Errorf("Test on %q: %v, want %v", name, err, want)
		}
		if _, err := c.Info(ctx); !errors.Is(err, want) {
			t.Errorf("Info on %q: %v, want %v", name, err, want)
		}
		if _, err := OpenCuckoo(ctx, client, name); !errors.Is(err, want) {
			t.Errorf("OpenCuckoo(%q): %v, want %v", name, err, want)
		}
	}
	c, _ := CuckooAt(client, "made", WithBucketSize(4))
	st, err := c.Insert(ctx, items("m", 0, 3), CuckooInsert{CreateCapacity: 64})
	if err != nil || len(st) != 3 || st[0] != cuckoo.Inserted {
		t.Fatalf("Insert with CreateCapacity = %v, %v", st, err)
	}
	if in, err := c.Info(ctx); err != nil || in.Buckets != 16 || in.BucketSize != 4 || in.Items != 3 {
		t.Errorf("made filter's Info = %+v, %v; want 16 buckets of 4, 3 items", in, err)
	}
	if _, err := c.Insert(ctx, items("m", 0, 3), CuckooInsert{MaxFilters: 1}); !errors.Is(err, ErrMaxFilters) {
		t.Errorf("Insert with MaxFilters 1 on 1 sub-filter: %v, want ErrMaxFilters", err)
	}
	if in, _ := c.Info(ctx); in.Items != 3 {
		t.Errorf("a refused Insert changed the items to %d", in.Items)
	}
}

// ExpireAt and Persist reach every key of the filter, also the pieces
// growth makes later; the condition is Redis's, on the metadata key.
func TestCuckooExpiry(t *testing.T) {
	_, client := newClient(t)
	ctx := context.Background()
	c, err := CreateCuckoo(ctx, client, "exp", 4, WithShardBytes(64))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour)
	if ok, err := c.ExpireAt(ctx, at, ExpireXX); ok || err != nil {
		t.Errorf("ExpireAt XX without an expiry = %v, %v; want false", ok, err)
	}
	if ok, err := c.ExpireAt(ctx, at, ExpireAlways); !ok || err != nil {
		t.Fatalf("ExpireAt = %v, %v", ok, err)
	}
	if _, err := c.AddMany(ctx, items("e", 0, 200)); err != nil { // grows: new pieces
		t.Fatal(err)
	}
	keys := listCuckooKeys(t, client, c)
	if len(keys) < 3 {
		t.Fatalf("only %d keys", len(keys))
	}
	for _, k := range keys {
		if d := client.PTTL(ctx, k).Val(); d <= 0 || d > time.Hour {
			t.Errorf("key %q: PTTL %v, want about an hour", k, d)
		}
	}
	if ok, err := c.Persist(ctx); !ok || err != nil {
		t.Fatalf("Persist = %v, %v", ok, err)
	}
	for _, k := range keys {
		if d := client.PTTL(ctx, k).Val(); d != -1 {
			t.Errorf("key %q: PTTL %v after Persist", k, d)
		}
	}
	if ok, err := c.ExpireAt(ctx, time.Now().Add(-time.Second), ExpireAlways); !ok || err != nil {
		t.Fatalf("ExpireAt in the past = %v, %v", ok, err)
	}
	if n := client.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys left after an expiry in the past", n)
	}
}
