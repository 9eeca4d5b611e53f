package redisfilter

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spaolacci/murmur3"
)

// goZeroCases are known answers: go-zero's offsets, murmur3.Sum64(item ‖
// byte(i)) mod bits for i < 14, computed once with spaolacci/murmur3.
var goZeroCases = []struct {
	item string
	bits uint64
	offs [GoZeroK]uint64
}{
	{"", 1000, [GoZeroK]uint64{0x29d, 0x35e, 0x2c2, 0x1c1, 0xe5, 0x188, 0x23, 0x167, 0x2be, 0x355, 0x278, 0xa7, 0x1c9, 0x346}},
	{"hello", 1 << 20, [GoZeroK]uint64{0x6b133, 0x6bf22, 0x3d362, 0x40793, 0xc23d7, 0xbdb02, 0xd808a, 0x16e40, 0x64e54, 0x750e0, 0xd470d, 0x88899, 0xc333, 0xe9d75}},
	{"user-12345", 1 << 32, [GoZeroK]uint64{0x4e81587a, 0xc5c63844, 0x611c9395, 0x1149e43a, 0xac1f8dbe, 0xdbeff2ec, 0x45c4b8f2, 0xf473ced, 0x28784414, 0x2ec53df0, 0x39b7c304, 0x1df45d7e, 0x8c9d55e, 0x2e67aca7}},
	{"0123456789abcdef", 20_000_000, [GoZeroK]uint64{0xd030b0, 0x10c1bc6, 0xa883b8, 0x7d4967, 0x3e1f16, 0x8d82a8, 0x5758e9, 0xdf7936, 0x394361, 0x3b260a, 0x1cbb40, 0xd00e7e, 0x838626, 0x1dbde2}},
}

func TestGoZeroOffsets(t *testing.T) {
	// The hash itself: MurmurHash3 x64-128's first half, reference vector.
	if h := murmur3.Sum64([]byte("hello")); h != 0xcbd8a7b341bd9b02 {
		t.Fatalf("murmur3.Sum64(hello) = %#x", h)
	}
	var buf []byte
	var offs []uint64
	for _, c := range goZeroCases {
		offs, buf = goZeroOffsets([]byte(c.item), c.bits, buf, offs[:0])
		if !slices.Equal(offs, c.offs[:]) {
			t.Errorf("%q mod %d: %#x, want %#x", c.item, c.bits, offs, c.offs)
		}
		for i, o := range offs { // the definition, spelled out again
			data := append([]byte(c.item), byte(i))
			if want := murmur3.Sum64(data) % c.bits; o != want {
				t.Errorf("%q bit %d: %d, want %d", c.item, i, o, want)
			}
		}
	}
	// With a buffer large enough, computing offsets allocates nothing.
	item := []byte("some item of moderate length")
	allocs := testing.AllocsPerRun(100, func() {
		offs, buf = goZeroOffsets(item, 1<<24, buf, offs[:0])
	})
	if allocs != 0 {
		t.Errorf("goZeroOffsets: %v allocations", allocs)
	}
}

// TestGoZeroBits: Add sets exactly the known bits, as SETBIT numbers them.
func TestGoZeroBits(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	for _, kc := range goZeroCases {
		if kc.bits > 1<<24 {
			continue // keep the server's memory small
		}
		f, err := OpenGoZero(c, "gz-bits", kc.bits)
		if err != nil {
			t.Fatal(err)
		}
		if isNew, err := f.Add(ctx, []byte(kc.item)); err != nil || !isNew {
			t.Fatalf("Add(%q) = %v, %v", kc.item, isNew, err)
		}
		if isNew, err := f.Add(ctx, []byte(kc.item)); err != nil || isNew {
			t.Fatalf("second Add(%q) = %v, %v", kc.item, isNew, err)
		}
		distinct := map[uint64]bool{}
		for _, o := range kc.offs {
			distinct[o] = true
			if c.GetBit(ctx, "gz-bits", int64(o)).Val() != 1 {
				t.Errorf("%q: bit %d unset", kc.item, o)
			}
		}
		if n := c.BitCount(ctx, "gz-bits", nil).Val(); n != int64(len(distinct)) {
			t.Errorf("%q: %d bits set, want %d", kc.item, n, len(distinct))
		}
		if ok, err := f.Exists(ctx, []byte(kc.item)); err != nil || !ok {
			t.Fatalf("Exists(%q) = %v, %v", kc.item, ok, err)
		}
		if err := f.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, err := f.Exists(ctx, []byte(kc.item)); err != nil || ok {
			t.Fatalf("Exists(%q) after Delete = %v, %v", kc.item, ok, err)
		}
	}
}

// TestGoZeroBatch: batches answer as single calls do and write the same
// bytes, in ⌈n / ⌊MaxOpsPerCommand/14⌋⌉ BITFIELD commands.
func TestGoZeroBatch(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	const bits = 200_000
	many, _ := OpenGoZero(c, "gz-many", bits)
	single, _ := OpenGoZero(c, "gz-single", bits)
	in := items("u", 0, 10_000)
	in = append(in, in[:50]...) // repeats within the batch
	before := commandCalls(t, c)
	got, err := many.AddMany(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	perCmd := MaxOpsPerCommand / GoZeroK
	if n := commandCalls(t, c)["bitfield"] - before["bitfield"]; n != (len(in)+perCmd-1)/perCmd {
		t.Errorf("AddMany of %d items: %d BITFIELD commands", len(in), n)
	}
	for i, it := range in {
		want, err := single.Add(ctx, it)
		if err != nil {
			t.Fatal(err)
		}
		if got[i] != want {
			t.Fatalf("AddMany[%d] = %v, Add %v", i, got[i], want)
		}
	}
	if a, b := c.Get(ctx, "gz-many").Val(), c.Get(ctx, "gz-single").Val(); a != b {
		t.Fatal("AddMany and Add wrote different bytes")
	}
	probes := append(items("u", 9_000, 30_000), []byte{})
	ex, err := many.ExistsMany(ctx, probes)
	if err != nil {
		t.Fatal(err)
	}
	fp := 0
	for i, it := range probes {
		want, err := single.Exists(ctx, it)
		if err != nil {
			t.Fatal(err)
		}
		if ex[i] != want {
			t.Fatalf("ExistsMany[%d] = %v, Exists %v", i, ex[i], want)
		}
		if i < 1000 && !ex[i] {
			t.Fatalf("false negative %q", it)
		}
		if i >= 1000 && ex[i] {
			fp++
		}
	}
	// 20 bits per item, k = 14: go-zero's table says about 7e-5.
	if fp > 10 {
		t.Errorf("%d false positives in %d probes", fp, len(probes)-1000)
	}
	if r, err := many.AddMany(ctx, nil); err != nil || len(r) != 0 {
		t.Errorf("empty batch: %v, %v", r, err)
	}
}

// TestGoZeroCallerBytes: no call writes to an item's spare capacity (as
// go-zero's append does), also when items share one backing array.
func TestGoZeroCallerBytes(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	f, _ := OpenGoZero(c, "gz-bytes", 1<<16)
	backing := bytes.Repeat([]byte{0xAA}, 32)
	copy(backing, "abcdef")
	want := slices.Clone(backing)
	a, b := backing[:3:32], backing[:6:32] // "abc" and "abcdef", spare capacity
	if _, err := f.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	f.Exists(ctx, b)
	f.AddMany(ctx, [][]byte{a, b, a})
	f.ExistsMany(ctx, [][]byte{b, a})
	if !bytes.Equal(backing, want) {
		t.Fatalf("the caller's array changed: %x", backing)
	}
	// Concurrent calls on overlapping items: a write would be a race.
	var wg sync.WaitGroup
	for _, it := range [][]byte{a, b, a, b} {
		wg.Go(func() {
			if ok, err := f.Exists(ctx, it); err != nil || !ok {
				t.Errorf("Exists(%q) = %v, %v", it, ok, err)
			}
		})
	}
	wg.Wait()
	if !bytes.Equal(backing, want) {
		t.Fatalf("the caller's array changed: %x", backing)
	}
}

func TestGoZeroArgsAndLifecycle(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	for _, bits := range []uint64{0, MaxGoZeroBits + 1, 1 << 63} {
		if _, err := OpenGoZero(c, "x", bits); !errors.Is(err, ErrInvalid) {
			t.Errorf("bits %d: %v", bits, err)
		}
	}
	f, err := OpenGoZero(c, "gz-life", MaxGoZeroBits)
	if err != nil {
		t.Fatal(err)
	}
	if f.Key() != "gz-life" || f.Bits() != MaxGoZeroBits {
		t.Errorf("Key %q, Bits %d", f.Key(), f.Bits())
	}
	f, _ = OpenGoZero(c, "gz-life", 1000)
	if _, err := f.Add(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.Expire(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, "gz-life").Val(); ttl < 59*time.Minute {
		t.Errorf("ttl %v", ttl)
	}
	if err := f.Expire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, "gz-life").Val(); ttl != -1 {
		t.Errorf("after persist: ttl %v", ttl)
	}
	if err := f.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, "gz-life").Val(); n != 0 {
		t.Error("key left after Delete")
	}
	// A key of another type fails with Redis's error, named.
	c.RPush(ctx, "gz-list", "x")
	g, _ := OpenGoZero(c, "gz-list", 1000)
	if _, err := g.Add(ctx, []byte("x")); err == nil || !isWrongType(err) {
		t.Errorf("Add to a list: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.ExistsMany(cctx, [][]byte{[]byte("x")}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}
