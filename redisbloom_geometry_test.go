package bloom

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// RedisBloom's geometry (bloom_init: bytes, bits, hashes and bits per
// entry) for a broad table of capacities and error rates, recorded from a
// real RedisBloom by TestRedisBloomModuleGeometry into
// testdata/redisbloom_geometry.txt: each row is a BF.RESERVE key <error>
// <capacity> NONSCALING (so the sub-filter has exactly that error) and the
// sub-filter of its BF.SCANDUMP header.

const rbGeometryFile = "testdata/redisbloom_geometry.txt"

// rbGeometryRecordEnv, set to 1 with BLOOMERY_REDISBLOOM, makes
// TestRedisBloomModuleGeometry rewrite the table from the module instead
// of checking the module against it.
const rbGeometryRecordEnv = "BLOOMERY_REDISBLOOM_RECORD"

// rbGeometryRow is one recorded geometry.
type rbGeometryRow struct {
	p       float64 // error rate, as sent (shortest decimal form)
	n       uint64  // capacity
	bytes   uint64
	bits    uint64
	hashes  uint32
	bpeBits uint64 // the bits per entry RedisBloom computed, as IEEE 754 bits
}

func (r rbGeometryRow) String() string {
	return fmt.Sprintf("%s %d %d %d %d %#016x", strconv.FormatFloat(r.p, 'g', -1, 64), r.n, r.bytes, r.bits, r.hashes, r.bpeBits)
}

func parseRBGeometryRow(line string) (rbGeometryRow, error) {
	var r rbGeometryRow
	_, err := fmt.Sscanf(line, "%g %d %d %d %d %v", &r.p, &r.n, &r.bytes, &r.bits, &r.hashes, &r.bpeBits)
	return r, err
}

// readRBGeometry reads the recorded table.
func readRBGeometry(t *testing.T) []rbGeometryRow {
	t.Helper()
	f, err := os.Open(rbGeometryFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []rbGeometryRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := parseRBGeometryRow(line)
		if err != nil {
			t.Fatalf("%s: %q: %v", rbGeometryFile, line, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 1000 {
		t.Fatalf("%s has %d rows, want at least 1000", rbGeometryFile, len(rows))
	}
	return rows
}

// TestRedisBloomGeometry checks Size in the RedisBloom layout against
// RedisBloom's recorded geometry: the same bits, bytes and hashes for
// every row, bits per entry equal or one unit in the last place apart
// (RedisBloom's comes from glibc's log, ours is correctly rounded; they
// differ for a few rates in ten thousand), and every recorded geometry
// accepted as RedisBloom's by CheckRate, as a loader must accept it.
func TestRedisBloomGeometry(t *testing.T) {
	rows := readRBGeometry(t)
	ulpApart := 0
	for _, r := range rows {
		sz, err := Size(r.n, r.p, RedisBloom)
		if err != nil {
			t.Errorf("%v: %v", r, err)
			continue
		}
		want := math.Float64frombits(r.bpeBits)
		if sz.Bits != r.bits || sz.Bytes() != r.bytes || sz.K != r.hashes {
			t.Errorf("p=%g n=%d: bits %d bytes %d k %d, RedisBloom's %d %d %d", r.p, r.n, sz.Bits, sz.Bytes(), sz.K, r.bits, r.bytes, r.hashes)
		}
		switch d := math.Float64bits(sz.BPE) - r.bpeBits; d {
		case 0:
		case 1, math.MaxUint64:
			ulpApart++
			t.Logf("p=%g: bits per entry %v, RedisBloom's %v (glibc's log misrounds)", r.p, sz.BPE, want)
		default:
			t.Errorf("p=%g: bits per entry %v, RedisBloom's %v", r.p, sz.BPE, want)
		}
		theirs := Sizing{Layout: RedisBloom, N: r.n, P: r.p, Bits: r.bits, K: r.hashes, BPE: want}
		if err := theirs.CheckRate(); err != nil {
			t.Errorf("RedisBloom's geometry %+v refused: %v", theirs, err)
		}
	}
	t.Logf("%d rows; bits per entry one unit in the last place apart in %d", len(rows), ulpApart)
	if ulpApart > len(rows)/500 {
		t.Errorf("bits per entry differ in %d of %d rows: more than the logarithms' rounding explains", ulpApart, len(rows))
	}
}

// rbGeometryCandidates are the (error, capacity) pairs the table records:
// decimal rates as people type them and their halvings (the rates of
// later sub-filters), log-uniform random rates, extremes, and capacities
// from 1 to 2^30 (bounded so that no filter has more than 2^31 bits).
func rbGeometryCandidates() [][2]float64 {
	var ps []float64
	for e := 1; e <= 12; e++ {
		for _, d := range []int{1, 2, 3, 5, 7, 9} {
			p, _ := strconv.ParseFloat(fmt.Sprintf("%de-%d", d, e), 64)
			for range 4 {
				ps = append(ps, p)
				p *= 0.5
			}
		}
	}
	r := rand.New(rand.NewPCG(13, 3))
	for range 1200 {
		ps = append(ps, math.Pow(10, -16*r.Float64()))
	}
	ps = append(ps, 0.25, 0.2499999999999999, 0.5, 0.9, 0.999, 0.9999999999999999,
		1e-100, 1e-300, 2.2250738585072014e-308, 5e-324)
	caps := []uint64{1, 2, 3, 7, 10, 64, 100, 1000, 2000, 12345, 100_000, 1_000_000, 1 << 30}
	var out [][2]float64
	for i, p := range ps {
		if p >= 1 {
			continue
		}
		n := caps[i%len(caps)]
		if i%3 == 0 {
			n = 1 + r.Uint64N(1<<26)
		}
		bpe := -math.Log(p) / rbLn2Squared
		n = max(1, min(n, uint64(float64(1<<31)/bpe)))
		out = append(out, [2]float64{p, float64(n)})
	}
	return out
}

// TestRedisBloomModuleGeometry checks the recorded table against the
// module of $BLOOMERY_REDISBLOOM (rows the module refuses or caps, above
// its limits, are skipped), or with BLOOMERY_REDISBLOOM_RECORD=1 records
// the table from it.
func TestRedisBloomModuleGeometry(t *testing.T) {
	m := startRedisBloom(t)
	if os.Getenv(rbGeometryRecordEnv) == "1" {
		m.recordGeometry(t)
		return
	}
	checked := 0
	for _, r := range readRBGeometry(t) {
		if m.version >= 80000 && (r.p > 0.25 || r.n > 1<<30) { // 8.x caps the rate and bounds the capacity
			continue
		}
		if got := m.geometry(t, r.p, r.n); got != r {
			t.Errorf("RedisBloom %d: %v, recorded %v", m.version, got, r)
		}
		checked++
	}
	t.Logf("%d rows checked against RedisBloom %d", checked, m.version)
}

// geometry is the sub-filter BF.RESERVE key p n NONSCALING makes.
func (m *rbModule) geometry(t *testing.T, p float64, n uint64) rbGeometryRow {
	t.Helper()
	ps := strconv.FormatFloat(p, 'g', -1, 64)
	m.do(t, "BF.RESERVE", "geometry", ps, n, "NONSCALING")
	hdr := []byte(m.do(t, "BF.SCANDUMP", "geometry", 0).([]any)[1].(string))
	m.do(t, "DEL", "geometry")
	if len(hdr) != rbChainSize+rbLinkSize {
		t.Fatalf("p=%s n=%d: a header of %d bytes", ps, n, len(hdr))
	}
	r := rbGeometryRow{p: p, n: n}
	r.bytes, r.bits, r.hashes, r.bpeBits = rbLinkGeometry(hdr, 0)
	return r
}

// recordGeometry writes the table of rbGeometryCandidates from m.
func (m *rbModule) recordGeometry(t *testing.T) {
	if m.version >= 80000 {
		t.Fatalf("record the geometry with RedisBloom 2.x: %d caps error rates above 0.25", m.version)
	}
	b := m.recordingHead("sub-filter geometry", "TestRedisBloomModuleGeometry",
		"# Each row: BF.RESERVE key <error> <capacity> NONSCALING, then the sub-filter of\n"+
			"# BF.SCANDUMP key 0. Columns: error capacity bytes bits hashes bits-per-entry (IEEE 754 bits).\n")
	for _, c := range rbGeometryCandidates() {
		fmt.Fprintln(b, m.geometry(t, c[0], uint64(c[1])))
	}
	if err := os.WriteFile(rbGeometryFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s", rbGeometryFile)
}

// RedisBloom's bits for single items, recorded like the geometry into
// testdata/redisbloom_bits.txt: for each item, the bits (LSB-first bit
// numbers of the dump) that BF.ADD sets in a new filter of
// BF.RESERVE key 0.001 1000 NONSCALING (14400 bits, 10 hashes).
const rbBitsFile = "testdata/redisbloom_bits.txt"

// rbBitsItems are the recorded items: every tail length of MurmurHash64A
// (0 to 7 bytes after whole 8-byte blocks), binary bytes, a long item.
func rbBitsItems() []string {
	const abc = "abcdefghijklmnopqrstuvwxyz"
	items := []string{"apple", "banana", "cherry", "\x00", "\xff\xfe\x80\x00\x01", strings.Repeat("bloomery", 13)}
	for n := 0; n <= 17; n++ {
		items = append(items, abc[:n])
	}
	return items
}

// TestRedisBloomModuleBits checks the recorded bits against the module of
// $BLOOMERY_REDISBLOOM, or records them with BLOOMERY_REDISBLOOM_RECORD=1.
func TestRedisBloomModuleBits(t *testing.T) {
	m := startRedisBloom(t)
	b := m.recordingHead("bits per item", "TestRedisBloomModuleBits",
		"# Each row: the item in hex (- when empty), then the bits BF.ADD sets in a new\n"+
			"# BF.RESERVE key 0.001 1000 NONSCALING filter (bit x: byte x/8, mask 1<<(x%8)).\n")
	for _, it := range rbBitsItems() {
		m.do(t, "BF.RESERVE", "bits", "0.001", 1000, "NONSCALING")
		m.do(t, "BF.ADD", "bits", it)
		chunks := m.scanDump(t, "bits")
		m.do(t, "DEL", "bits")
		fmt.Fprintln(b, rbBitsRow(it, setBits(chunks[1].data)))
	}
	if os.Getenv(rbGeometryRecordEnv) == "1" {
		if err := os.WriteFile(rbBitsFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s", rbBitsFile)
		return
	}
	want, err := os.ReadFile(rbBitsFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := dataLines(b.String()); got != dataLines(string(want)) {
		t.Errorf("RedisBloom %d sets other bits than recorded:\n%s", m.version, got)
	}
}

// recordingHead starts a recorded file: what it is, where from, the
// command that records it again, and what its rows are.
func (m *rbModule) recordingHead(what, test, rows string) *strings.Builder {
	b := new(strings.Builder)
	fmt.Fprintf(b, "# RedisBloom's %s, recorded from RedisBloom (module version %d) by\n", what, m.version)
	fmt.Fprintf(b, "# %s=<module.so> %s=1 go test -run %s .\n", redisBloomEnv, rbGeometryRecordEnv, test)
	b.WriteString(rows)
	return b
}

// setBits lists the set bits of b, LSB first within each byte.
func setBits(b []byte) []uint64 {
	var out []uint64
	for i, c := range b {
		for j := range 8 {
			if c&(1<<j) != 0 {
				out = append(out, uint64(8*i+j))
			}
		}
	}
	return out
}

func rbBitsRow(item string, bits []uint64) string {
	h := fmt.Sprintf("%x", item)
	if h == "" {
		h = "-"
	}
	return h + " " + strings.Trim(fmt.Sprint(bits), "[]")
}

// dataLines is text without its comment lines.
func dataLines(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
