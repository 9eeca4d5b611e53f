package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Tests of the layout rule of a Scalable filter's sub-filters
// (scalable_layout.go): small sub-filters of a blocked chain are classic
// where that is smaller, written as format version 3; files of version 1
// (every sub-filter blocked) still load, and keep growing as they were.

// TestSubSizingRule: a blocked chain's sub-filter is classic exactly when
// its blocked array would be at most 8 blocks and the classic one is
// smaller; uniform chains and the other layouts keep their layout; and
// the server's default filter (capacity 100 at 0.01, RedisBloom's split)
// gets a classic first sub-filter of 152 bytes instead of 3 blocks.
func TestSubSizingRule(t *testing.T) {
	classic := 0
	for _, p := range []float64{0.5, 0.1, 0.01, 0.005, 1e-3, 1e-4, 1e-6, 1e-9} {
		for n := uint64(1); n <= 2000; n += 1 + n/8 {
			b, err := Size(n, p, Blocked)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Size(n, p, Classic)
			if err != nil {
				t.Fatal(err)
			}
			want := b
			if b.Bytes() <= 512 && c.Bytes() < b.Bytes() {
				want = c
				classic++
			}
			if got, err := subSizing(n, p, Blocked, false); err != nil || got != want {
				t.Errorf("n=%d p=%g: %v, %v; want %v", n, p, got, err, want)
			}
			if got, _ := subSizing(n, p, Blocked, true); got != b {
				t.Errorf("n=%d p=%g, uniform: %v, want %v", n, p, got, b)
			}
			for _, l := range []Layout{Classic, RedisBloom} {
				if got, _ := subSizing(n, p, l, false); got.Layout != l {
					t.Errorf("n=%d p=%g in a %s chain: %v", n, p, l, got)
				}
			}
		}
	}
	if classic < 100 {
		t.Errorf("only %d small sub-filters made classic", classic)
	}
	s, err := NewScalable(100, 0.01, WithRedisBloomSplit())
	if err != nil {
		t.Fatal(err)
	}
	if sz := s.filters()[0].Sizing(); sz.Layout != Classic || sz.Bytes() != 152 || s.Bytes() != 152 || s.Layout() != Blocked {
		t.Errorf("default filter: %v, %d bytes, layout %s; want classic, 152 bytes, blocked", sz, s.Bytes(), s.Layout())
	}
}

// ruleRecordEnv, set to 1, makes TestSubLayoutTable write the table
// again instead of checking it.
const ruleRecordEnv = "BLOOMERY_RULE_RECORD"

// TestSubLayoutTable pins the rule: which capacities at which rates get
// a classic sub-filter, recorded in testdata/scalable_small_rule.txt. A
// version-3 file is valid only with the layouts the rule gave when it was
// written, so a change to Size that moves these lines breaks such files:
// it needs a new format version (docs/FORMAT.md), not a new table.
func TestSubLayoutTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("# capacity ranges of classic (c) and blocked (b) sub-filters of a blocked chain, per rate\n")
	for _, p := range ruleTableRates() {
		fmt.Fprintf(&b, "p=%g", p)
		last, from, blockedFrom := Layout(0), uint64(1), uint64(0)
		for n := uint64(1); blockedFrom == 0 || n <= 2*blockedFrom+8; n++ {
			l := subLayout(n, p, Blocked, false)
			if sz, _ := Size(n, p, Blocked); sz.Bytes() > smallBlockedBytes && blockedFrom == 0 {
				blockedFrom = n
			}
			if l != last && last != 0 {
				fmt.Fprintf(&b, " %c%d-%d", last.String()[0], from, n-1)
				from = n
			}
			last = l
		}
		fmt.Fprintf(&b, " %c%d-\n", last.String()[0], from)
	}
	path := filepath.Join("testdata", "scalable_small_rule.txt")
	if os.Getenv(ruleRecordEnv) == "1" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("the rule changed (%s=1 records it, but a change breaks version-3 files):\n%s\nwant\n%s", ruleRecordEnv, b.String(), want)
	}
}

// ruleTableRates are the rates of the rule table: a 1-2-5 grid from 0.5
// to 1e-9, and the sub-filter rates of filters at 0.01 with either split.
func ruleTableRates() []float64 {
	var ps []float64
	for e := 1; e <= 9; e++ {
		for _, m := range []int{5, 2, 1} {
			p, err := strconv.ParseFloat(fmt.Sprintf("%de-%d", m, e), 64)
			if err != nil {
				panic(err)
			}
			ps = append(ps, p)
		}
	}
	for _, so := range []Growth{{}, {RedisBloom: true}} {
		pl, err := NewScalablePlan(100, 0.01, WithGrowth(so))
		if err != nil {
			panic(err)
		}
		for i := range 6 {
			_, p, _ := pl.SubRate(i)
			ps = append(ps, p)
		}
	}
	return ps
}

// goldenV1 are files written before the rule (format version 1), by
// commit bff4649; every sub-filter of the blocked ones is blocked.
var goldenV1 = []struct {
	name  string
	items int
	opts  []Option
}{
	{"scalable-v1-blocked-redisbloom.bloom", 350, nil},
	{"scalable-v1-blocked-keyed.bloom", 50, []Option{WithKey([16]byte{'g', 'o', 'l', 'd', 'e', 'n', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})}},
	{"scalable-v1-blocked-nonscaling.bloom", 15, nil},
	{"scalable-v1-classic.bloom", 120, nil},
}

// TestScalableVersion1Files: files of version 1 load by every path (the
// decoder, UnmarshalBinary, OpenAny, the dump header), hold their items,
// encode back byte for byte, and a blocked one stays uniform as it grows
// (its new sub-filters blocked, its encoding still version 1).
func TestScalableVersion1Files(t *testing.T) {
	for i, g := range goldenV1 {
		t.Run(g.name, func(t *testing.T) {
			path := filepath.Join("testdata", g.name)
			data := goldenV1Files(t)[i]
			s, err := LoadScalable(bytes.NewReader(data), g.opts...)
			if err != nil {
				t.Fatal(err)
			}
			checkGoldenItems(t, s, g.items)
			blocked := s.Layout() == Blocked
			if s.Growth().UniformLayout != blocked {
				t.Errorf("UniformLayout %v for a %s file of version 1", s.Growth().UniformLayout, s.Layout())
			}
			if !bytes.Equal(encodeScalable(t, s), data) {
				t.Error("re-encoding differs from the file")
			}
			u, err := NewScalable(1, 0.5, g.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := u.UnmarshalBinary(data); err != nil || !bytes.Equal(encodeScalable(t, u), data) {
				t.Errorf("UnmarshalBinary: %v, or its encoding differs", err)
			}
			a, err := OpenAny(path, g.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if a.Scalable == nil || !bytes.Equal(encodeScalable(t, a.Scalable), data) {
				t.Errorf("OpenAny gave kind %v, or its encoding differs", a.Kind)
			}
			d, err := LoadScalableHeader(s.DumpHeader(), g.opts...)
			if err != nil {
				t.Fatal(err)
			}
			payload := make([]byte, s.PayloadSize())
			if _, err := s.ReadPayloadAt(payload, 0); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			if _, err := d.WritePayloadAt(payload, 0); err != nil || !bytes.Equal(encodeScalable(t, d), data) {
				t.Errorf("dump header and payload: %v, or the encoding differs", err)
			}
			if s.Expansion() == 0 {
				return
			}
			addKeys(t, s, "more-", int(s.Cap()))
			for i, f := range s.filters() {
				if f.layout != s.Layout() {
					t.Errorf("grown sub-filter %d in layout %s, chain %s", i, f.layout, s.Layout())
				}
			}
			if v := binary.LittleEndian.Uint16(encodeScalable(t, s)[8:]); v != formatVersion {
				t.Errorf("grown filter encoded as version %d", v)
			}
		})
	}
}

// goldenV1Files reads the golden files of version 1.
func goldenV1Files(tb testing.TB) [][]byte {
	var out [][]byte
	for _, g := range goldenV1 {
		data, err := os.ReadFile(filepath.Join("testdata", g.name))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// checkGoldenItems: the golden files hold item-0 … item-(n−1).
func checkGoldenItems(t *testing.T, s *Scalable, n int) {
	t.Helper()
	for i := range n {
		if !s.TestString(fmt.Sprintf("item-%d", i)) {
			t.Fatalf("item-%d absent", i)
		}
	}
	if s.Count() != uint64(n) {
		t.Errorf("count %d, want %d", s.Count(), n)
	}
}

// TestScalableVersion3: a blocked filter with the rule is written as
// version 3 (header and dump header), with classic small sub-filters,
// and reads back the same by every path; a classic or RedisBloom one,
// or a uniform blocked one, keeps version 1 (2 in layout 3).
func TestScalableVersion3(t *testing.T) {
	cases := []struct {
		name    string
		opts    []Option
		version uint16
		classic bool // has classic sub-filters in a blocked chain
	}{
		{"blocked", nil, formatVersionSmall, true},
		{"blocked keyed", []Option{WithKey(fuzzKey)}, formatVersionSmall, true},
		{"blocked uniform", []Option{WithGrowth(Growth{UniformLayout: true})}, formatVersion, false},
		{"classic", []Option{WithLayout(Classic)}, formatVersion, false},
		{"redisbloom", []Option{WithLayout(RedisBloom)}, formatVersionRB, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewScalable(10, 0.01, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			addKeys(t, s, "k", 500) // 6 sub-filters, the last ones large
			var classic, blocked int
			for _, f := range s.filters() {
				switch {
				case f.layout == Classic && s.Layout() == Blocked:
					classic++
				case f.layout == Blocked:
					blocked++
				}
			}
			if (classic > 0) != c.classic || (c.classic && blocked == 0) {
				t.Errorf("%d classic and %d blocked sub-filters", classic, blocked)
			}
			data := encodeScalable(t, s)
			hdr := s.DumpHeader()
			if v := binary.LittleEndian.Uint16(data[8:]); v != c.version || binary.LittleEndian.Uint16(hdr[8:]) != v {
				t.Errorf("version %d, dump header %d; want %d", v, binary.LittleEndian.Uint16(hdr[8:]), c.version)
			}
			if data[11] != uint8(s.Layout()) {
				t.Errorf("header layout %d, chain %s", data[11], s.Layout())
			}
			keyOpts := c.opts[:0:0]
			for _, o := range c.opts {
				if newConfig([]Option{o}).keyed {
					keyOpts = append(keyOpts, o)
				}
			}
			back, err := LoadScalable(bytes.NewReader(data), keyOpts...)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(encodeScalable(t, back), data) || back.Growth() != s.Growth() {
				t.Errorf("read back: encoding differs, or growth %+v, want %+v", back.Growth(), s.Growth())
			}
			d, err := LoadScalableHeader(hdr, keyOpts...)
			if err != nil || !bytes.Equal(d.DumpHeader(), hdr) {
				t.Fatalf("dump header: %v, or it dumps back differently", err)
			}
			a, err := LoadAny(bytes.NewReader(data), keyOpts...)
			if err != nil || a.Scalable == nil || !bytes.Equal(encodeScalable(t, a.Scalable), data) {
				t.Fatalf("LoadAny: %v, or the encoding differs", err)
			}
			// Both grow alike from here.
			addKeys(t, s, "more", 600)
			addKeys(t, back, "more", 600)
			if !bytes.Equal(encodeScalable(t, back), encodeScalable(t, s)) {
				t.Error("the filter read back grows differently")
			}
		})
	}
}

// setVersion returns data with the kind-2 header's version set to v and
// its CRC made valid.
func setVersion(data []byte, v uint16) []byte {
	d := bytes.Clone(data)
	binary.LittleEndian.PutUint16(d[8:], v)
	binary.LittleEndian.PutUint32(d[60:], crc32.Checksum(d[:60], castagnoli))
	return d
}

// TestScalableLayoutRuleRefused: the readers accept exactly the layouts
// the header's version gives: version 1 with a classic sub-filter in a
// blocked chain, version 3 with a small sub-filter blocked (a file of
// version 1 relabelled) or a large one classic, and version 3 outside a
// blocked scalable filter are refused.
func TestScalableLayoutRuleRefused(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "scalable-v1-blocked-redisbloom.bloom"))
	if err != nil {
		t.Fatal(err)
	}
	s := grownScalable(t, 400, Growth{RedisBloom: true}) // 50, 100 classic; 200, 400 blocked
	if fs := s.filters(); len(fs) != 4 || fs[0].layout != Classic || fs[1].layout != Classic || fs[3].layout != Blocked {
		t.Fatalf("test filter: %d sub-filters, %v … %v", len(fs), fs[0].Sizing(), fs[len(fs)-1].Sizing())
	}
	cur := encodeScalable(t, s)
	f := newFilterT(t, 1, 0.01)
	kind1 := setVersion(encodeBytes(t, f), formatVersionSmall)
	cl := grownScalable(t, 60, Growth{}, WithLayout(Classic))
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"version 3 with blocked small sub-filters", setVersion(old, formatVersionSmall), "small sub-filters classic"},
		{"version 1 with classic sub-filters", setVersion(cur, formatVersion), "layout classic in a blocked chain"},
		{"version 3 with a classic large sub-filter", withClassicLast(t, s), "small sub-filters classic"},
		{"version 3 of kind 1", kind1, "version 3"},
		{"version 3 of a classic chain", setVersion(encodeScalable(t, cl), formatVersionSmall), "version 3"},
		{"version 4", setVersion(cur, 4), "version 4"},
	}
	for _, c := range cases {
		_, err := LoadScalable(bytes.NewReader(c.data))
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrFormat saying %q", c.name, err, c.want)
		}
		if _, err := LoadAny(bytes.NewReader(c.data)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: LoadAny: %v", c.name, err)
		}
	}
	if _, err := Load(bytes.NewReader(kind1)); !errors.Is(err, ErrFormat) {
		t.Errorf("Load of a kind-1 encoding of version 3: %v", err)
	}
}

// withClassicLast returns s's encoding with its last sub-filter (large,
// blocked) replaced by a classic one of the same capacity, rate and count.
func withClassicLast(t *testing.T, s *Scalable) []byte {
	t.Helper()
	fs := s.filters()
	last := fs[len(fs)-1]
	sz, err := Size(last.n, last.p, Classic)
	if err != nil {
		t.Fatal(err)
	}
	c := newSizedT(t, sz)
	c.setInserted(last.Inserted())
	var b bytes.Buffer
	b.Write(s.head(fs))
	for _, f := range fs[:len(fs)-1] {
		if _, err := f.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeBytes(t *testing.T, f *Filter) []byte {
	t.Helper()
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
