package bloom

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRedisBloomBits: a filter in the RedisBloom layout sets exactly the
// bits RedisBloom sets for the same item (testdata/redisbloom_bits.txt,
// recorded from RedisBloom), and Offsets names them in the Redis bit
// numbering.
func TestRedisBloomBits(t *testing.T) {
	text, err := os.ReadFile(rbBitsFile)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(dataLines(string(text))), "\n")
	if len(rows) != len(rbBitsItems()) {
		t.Fatalf("%s has %d rows, want %d", rbBitsFile, len(rows), len(rbBitsItems()))
	}
	for _, row := range rows {
		fields := strings.Fields(row)
		item, err := hex.DecodeString(strings.TrimPrefix(fields[0], "-"))
		if err != nil {
			t.Fatal(err)
		}
		var want []uint64
		for _, s := range fields[1:] {
			x, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, x)
		}
		f, err := New(1000, 0.001, WithLayout(RedisBloom))
		if err != nil {
			t.Fatal(err)
		}
		if f.Bits() != 14400 || f.K() != 10 || f.HashID() != HashMurmur64A {
			t.Fatalf("New(1000, 0.001): %d bits, k %d, hash %s; RedisBloom's: 14400, 10, murmur64a-pair", f.Bits(), f.K(), f.HashID())
		}
		if !f.Add(item) || !f.Test(item) {
			t.Fatalf("%q: Add did not report new or Test misses it", item)
		}
		buf := make([]byte, f.Bytes())
		f.ReadAt(buf, 0)
		if got := setBits(buf); !slices.Equal(got, want) {
			t.Errorf("%q sets bits %v, RedisBloom %v", item, got, want)
		}
		var offs []uint64
		for _, o := range f.Offsets(f.Hash(item), nil) {
			offs = append(offs, o^7) // Redis numbering to LSB-first
		}
		slices.Sort(offs)
		if offs = slices.Compact(offs); !slices.Equal(offs, want) {
			t.Errorf("%q: Offsets give bits %v, RedisBloom %v", item, offs, want)
		}
	}
}

// TestRedisBloomInfoSize: BF.INFO's Size and the sub-filters of
// BF.RESERVE's filters, as RedisBloom reports them.
func TestRedisBloomInfoSize(t *testing.T) {
	for _, c := range []struct {
		n                 uint64
		p                 float64
		size, bytes, bits uint64
		k                 uint32
		nonScaling        bool
		subRate           float64
	}{
		{n: 2000, p: 0.001, size: 4056, bytes: 3960, bits: 31680, k: 11, subRate: 0.0005}, // go-redis's test
		{n: 100, p: 0.01, size: 240, bytes: 144, bits: 1152, k: 8, subRate: 0.005},        // BF.DEBUG's example
		{n: 100, p: 0.01, size: 216, bytes: 120, bits: 960, k: 7, nonScaling: true, subRate: 0.01},
	} {
		s, err := NewScalable(c.n, c.p, WithLayout(RedisBloom), WithGrowth(Growth{NonScaling: c.nonScaling}))
		if err != nil {
			t.Fatal(err)
		}
		in, f := s.Info(), s.filters()[0]
		if in.RedisBloomSize() != c.size || f.Bytes() != c.bytes || f.Bits() != c.bits || f.K() != c.k || f.p != c.subRate {
			t.Errorf("n=%d p=%g nonscaling=%v: Size %d, sub-filter %d bytes %d bits k %d rate %g; RedisBloom: %d, %d, %d, %d, %g",
				c.n, c.p, c.nonScaling, in.RedisBloomSize(), f.Bytes(), f.Bits(), f.K(), f.p, c.size, c.bytes, c.bits, c.k, c.subRate)
		}
	}
}

// TestRedisBloomGrowth: sub-filter i has capacity n0·s^i and rate
// p/2^(i+1), opens when the last one holds its capacity of new items,
// and every item stays present (concurrent filters too).
func TestRedisBloomGrowth(t *testing.T) {
	for _, opts := range [][]Option{nil, {WithConcurrent()}} {
		s, err := NewScalable(10, 0.01, append(opts, WithLayout(RedisBloom), WithExpansion(3))...)
		if err != nil {
			t.Fatal(err)
		}
		const items = 1000
		for i := range items {
			if _, err := s.AddString(fmt.Sprint("item", i)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range items {
			if !s.TestString(fmt.Sprint("item", i)) {
				t.Fatalf("item%d missing", i)
			}
		}
		fs := s.filters()
		if len(fs) != 5 { // 10+30+90+270 = 400 < 1000 ≤ 1210
			t.Fatalf("%d sub-filters, want 5", len(fs))
		}
		for i, f := range fs {
			capacity, rate := uint64(10*math.Pow(3, float64(i))), 0.01/math.Pow(2, float64(i+1))
			if f.Cap() != capacity || f.p != rate || f.Layout() != RedisBloom {
				t.Errorf("sub-filter %d: capacity %d rate %g layout %s, want %d %g redisbloom", i, f.Cap(), f.p, f.Layout(), capacity, rate)
			}
			if i < len(fs)-1 && f.Inserted() != f.Cap() {
				t.Errorf("sub-filter %d holds %d items before the next opened, want %d", i, f.Inserted(), f.Cap())
			}
		}
	}
}

// TestRedisBloomLayoutRefuses what the layout cannot be.
func TestRedisBloomLayoutRefuses(t *testing.T) {
	if _, err := New(100, 0.01, WithLayout(RedisBloom), WithKey(fuzzKey)); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("keyed New: %v, want ErrInvalidLayout", err)
	}
	if _, err := NewScalable(100, 0.01, WithLayout(RedisBloom), WithKey(fuzzKey)); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("keyed NewScalable: %v, want ErrInvalidLayout", err)
	}
	if _, err := NewScalable(100, 0.01, WithLayout(RedisBloom), WithExpansion(1<<32)); err == nil {
		t.Error("expansion 2^32 (RedisBloom's growth is 32 bits) accepted")
	}
	s, err := NewScalable(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RedisBloomHeader(); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("RedisBloomHeader of a blocked filter: %v, want ErrInvalidLayout", err)
	}
	bad := []Sizing{
		{Layout: Classic, N: 100, P: 0.01, Bits: 960, K: 7, BPE: 9.5},           // BPE outside the RedisBloom layout
		{Layout: RedisBloom, N: 100, P: 0.01, Bits: 960, K: 7, BPE: math.NaN()}, // not a BPE
		{Layout: RedisBloom, N: 100, P: 0.01, Bits: 1024, K: 7},                 // not RedisBloom's bits
		{Layout: RedisBloom, N: 100, P: 0.01, Bits: 960, K: 6},                  // not RedisBloom's k
		{Layout: RedisBloom, N: 100, P: 0.01, Bits: 960, K: 7, BPE: 9.6},        // not p's BPE
	}
	for _, sz := range bad {
		if _, err := NewSized(sz); err == nil {
			t.Errorf("NewSized(%+v) accepted", sz)
		}
	}
	if _, err := NewSized(Sizing{Layout: RedisBloom, N: 100, P: 0.01, Bits: 960, K: 7}); err != nil {
		t.Errorf("NewSized of RedisBloom's geometry: %v", err)
	}
}

// TestRedisBloomRoundTrips: a RedisBloom-layout filter survives every
// way out and back (RedisBloom dump chunks, Bloomery's dump header and
// payload, Bloomery's file of a Scalable and of a Filter) with its bits,
// counts and growth; files of this layout are version 2.
func TestRedisBloomRoundTrips(t *testing.T) {
	for _, g := range []Growth{{}, {Expansion: 4}, {NonScaling: true, Expansion: 2}, {NonScaling: true}} {
		s, err := NewScalable(50, 0.001, WithLayout(RedisBloom), WithGrowth(g))
		if err != nil {
			t.Fatal(err)
		}
		items := 40
		if !g.NonScaling {
			items = 2000
		}
		addKeys(t, s, "k", items)
		want := encodeScalable(t, s)
		if v := want[8]; v != formatVersionRB {
			t.Errorf("%+v: file version %d, want %d", g, v, formatVersionRB)
		}
		viaChunks := loadDump(t, goDump(t, s))
		viaHeader, err := LoadScalableHeader(s.DumpHeader())
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, s.PayloadSize())
		s.ReadPayloadAt(buf, 0)
		viaHeader.WritePayloadAt(buf, 0)
		viaFile, err := LoadScalable(bytes.NewReader(want))
		if err != nil {
			t.Fatal(err)
		}
		for name, got := range map[string]*Scalable{"dump chunks": viaChunks, "dump header": viaHeader, "file": viaFile} {
			if !bytes.Equal(encodeScalable(t, got), want) || got.Info() != s.Info() {
				t.Errorf("%+v via %s: another filter came back (%+v, was %+v)", g, name, got.Info(), s.Info())
			}
			for i := range items {
				if !got.TestString(fmt.Sprint("k", i)) {
					t.Fatalf("%+v via %s: k%d missing", g, name, i)
				}
			}
		}
	}
	f, err := New(1000, 0.01, WithLayout(RedisBloom))
	if err != nil {
		t.Fatal(err)
	}
	f.AddString("apple")
	data, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Load(bytes.NewReader(data))
	if err != nil || g.Sizing() != f.Sizing() || !g.TestString("apple") || g.HashID() != HashMurmur64A {
		t.Fatalf("Filter round trip: %v, %+v (was %+v)", err, g.Sizing(), f.Sizing())
	}
	path := filepath.Join(t.TempDir(), "rb.bloom")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func() (*File, error){
		func() (*File, error) { return OpenAny(path) }, // memory-mapped
		func() (*File, error) { return LoadAny(bytes.NewReader(data)) },
	} {
		file, err := open()
		if err != nil || file.Filter.Sizing() != f.Sizing() || !file.Filter.TestString("apple") || file.Filter.TestString("pear") {
			t.Fatalf("a RedisBloom-layout file opened: %v", err)
		}
		file.Filter.Close()
	}
}

// TestRedisBloomGrowthReported: Growth, InitialCap and TargetFPR make a
// filter with the same RedisBloom dump header (growth field included).
func TestRedisBloomGrowthReported(t *testing.T) {
	for _, g := range []Growth{{}, {Expansion: 5}, {NonScaling: true}, {NonScaling: true, Expansion: 2}} {
		s, err := NewScalable(100, 0.02, WithLayout(RedisBloom), WithGrowth(g))
		if err != nil {
			t.Fatal(err)
		}
		again, err := NewScalable(s.InitialCap(), s.TargetFPR(), WithLayout(RedisBloom), WithGrowth(s.Growth()))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := s.RedisBloomHeader()
		b, _ := again.RedisBloomHeader()
		if !bytes.Equal(a, b) {
			t.Errorf("%+v: remade from Growth() %+v, the header differs:\n %x\n %x", g, s.Growth(), a, b)
		}
	}
}
