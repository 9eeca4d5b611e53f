package bloom

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// RedisBloom chains its commands never make, from dump headers made by
// hand (redisbloom_chain.go): each is loaded, given items with one
// BF.MADD, dumped and probed, here and in a real RedisBloom, and the two
// must agree on every reply and every byte. What RedisBloom answered is
// recorded in testdata/redisbloom_chains.txt, which make test checks;
// with $BLOOMERY_REDISBLOOM set, TestRedisBloomModuleChains checks the
// record against the module (or records it again with
// BLOOMERY_REDISBLOOM_RECORD=1).

const rbChainsFile = "testdata/redisbloom_chains.txt"

// rbChainCase is a hand-made header and the items it gets.
type rbChainCase struct {
	name   string
	header []byte
	items  int
}

// rbLinkOf is the dump-header link of a geometry from rbInit.
func rbLinkOf(t testing.TB, n uint64, p float64, options uint32) rbLink {
	t.Helper()
	sz, n2, err := rbInit(n, p, options)
	if err != nil {
		t.Fatal(err)
	}
	return rbLink{bytes: sz.Bytes(), bits: sz.Bits, err: sz.P, bpe: sz.BPE, hashes: sz.K, entries: sz.N, n2: n2}
}

// rbHeaderBytes encodes a dump header of links.
func rbHeaderBytes(options, growth uint32, links ...rbLink) []byte {
	b := make([]byte, rbChainSize+rbLinkSize*len(links))
	le := binary.LittleEndian
	var size uint64
	for i, l := range links {
		l.put(b[rbChainSize+rbLinkSize*i:])
		size += l.size
	}
	le.PutUint64(b[0:], size)
	le.PutUint32(b[8:], uint32(len(links)))
	le.PutUint32(b[12:], options)
	le.PutUint32(b[16:], growth)
	return b
}

func rbChainCases(t testing.TB) []rbChainCase {
	h1 := rbLink{bytes: 8, bits: 64, err: 0.01, bpe: 10, hashes: 7, entries: 4}
	nonScaling := rbLinkOf(t, 3, 0.01, 5)
	nonScaling.size = 3
	second := rbLinkOf(t, 6, 0.01, 5)
	second.size = 2
	huge := h1
	huge.size = 1 << 40
	hashless := h1
	hashless.bpe, hashless.hashes = 0, 0
	growth0 := h1
	growth0.entries, growth0.size = 1, 1
	below := rbLinkOf(t, 50, 0.01, rbOptForce64|rbOptNoRound)
	below.bytes, below.bits, below.n2 = 128, 1024, 9
	return []rbChainCase{
		{"32-bit hashing", rbHeaderBytes(rbOptNoRound, 2, rbLinkOf(t, 100, 0.01, rbOptNoRound)), 300},
		{"32-bit hashing, power-of-two sizing", rbHeaderBytes(0, 2, rbLinkOf(t, 100, 0.01, 0)), 400},
		{"power-of-two sizing", rbHeaderBytes(rbOptForce64, 3, rbLinkOf(t, 50, 0.001, rbOptForce64)), 400},
		{"sized in bits, growth past 2^63", rbHeaderBytes(rbOptForce64|rbOptEntsIsBits, 100, rbLinkOf(t, 10, 0.01, rbOptForce64|rbOptEntsIsBits)), 200},
		{"sized in bits", rbHeaderBytes(rbOptForce64|rbOptEntsIsBits, 5, rbLinkOf(t, 4, 0.01, rbOptForce64|rbOptEntsIsBits)), 100},
		{"n2 below the bits", rbHeaderBytes(rbOptForce64|rbOptNoRound, 2, below), 120},
		{"bits per entry not the rate's", rbHeaderBytes(rbOptForce64|rbOptNoRound, 2, h1), 30},
		{"no hashes", rbHeaderBytes(rbOptForce64|rbOptNoRound, 2, hashless), 5},
		{"growth 0", rbHeaderBytes(rbOptForce64|rbOptNoRound, 0, growth0), 5},
		{"more items than capacity", rbHeaderBytes(rbOptForce64|rbOptNoRound, 2, huge), 10},
		{"non-scaling, two full sub-filters", rbHeaderBytes(rbOptForce64|rbOptNoRound|rbOptNoScaling, 2, nonScaling, second), 40},
		{"32-bit, non-scaling", rbHeaderBytes(rbOptNoRound|rbOptNoScaling, 2, rbLinkOf(t, 50, 0.001, rbOptNoRound)), 60},
	}
}

// rbChainRecord is what a chain answered: the BF.MADD reply (1, 0, F for
// "non scaling filter is full", E for "problem inserting into filter"),
// its dump (header and bits, hex) and BF.MEXISTS of 200 other items.
type rbChainRecord struct {
	madd, header, bits, exists string
}

func (r rbChainRecord) lines(name string) string {
	return fmt.Sprintf("=== %s\nmadd %s\nheader %s\nbits %s\nexists %s\n", name, r.madd, r.header, r.bits, r.exists)
}

func rbItem(prefix string, i int) string { return fmt.Sprintf("%s:%d", prefix, i) }

// bloomeryChain is what Bloomery answers for c, and the filter.
func bloomeryChain(t *testing.T, c rbChainCase) (rbChainRecord, *Scalable) {
	t.Helper()
	s, err := LoadRedisBloomHeader(c.header)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	var madd strings.Builder
	for i := range c.items {
		added, err := s.AddString(rbItem("item", i))
		switch {
		case errors.Is(err, ErrFull):
			madd.WriteByte('F')
		case errors.Is(err, ErrCannotGrow):
			madd.WriteByte('E')
		case err != nil:
			t.Fatalf("%s: item %d: %v", c.name, i, err)
		case added:
			madd.WriteByte('1')
		default:
			madd.WriteByte('0')
		}
		if errors.Is(err, ErrFull) {
			break // BF.MADD stops there
		}
	}
	r := chainState(t, s)
	r.madd = madd.String()
	return r, s
}

// chainState is s's dump and answers to the probes.
func chainState(t *testing.T, s *Scalable) rbChainRecord {
	t.Helper()
	var r rbChainRecord
	chunks := goDump(t, s)
	r.header = hex.EncodeToString(chunks[0].data)
	for _, ch := range chunks[1:] {
		r.bits += hex.EncodeToString(ch.data)
	}
	var exists strings.Builder
	for i := range 200 {
		exists.WriteByte("01"[b2i(s.TestString(rbItem("probe", i)))])
	}
	r.exists = exists.String()
	return r
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRedisBloomChains: Bloomery answers the hand-made chains as the
// recorded RedisBloom did, and their dumps load back the same through
// Bloomery's own encoding.
func TestRedisBloomChains(t *testing.T) {
	want, err := os.ReadFile(rbChainsFile)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, c := range rbChainCases(t) {
		r, s := bloomeryChain(t, c)
		got.WriteString(r.lines(c.name))
		// Bloomery's own encoding (snapshots) keeps the chain as it is:
		// the same dump, answers and growth.
		again, err := LoadScalable(bytes.NewReader(encodeScalable(t, s)))
		if err != nil {
			t.Errorf("%s: Bloomery's encoding does not load back: %v", c.name, err)
			continue
		}
		for i := range 50 {
			_, err1 := s.AddString(rbItem("more", i))
			_, err2 := again.AddString(rbItem("more", i))
			if fmt.Sprint(err1) != fmt.Sprint(err2) {
				t.Errorf("%s: adding after a reload: %v, before: %v", c.name, err2, err1)
			}
		}
		if a, b := chainState(t, again), chainState(t, s); a != b {
			t.Errorf("%s: reloaded from Bloomery's encoding, it answers otherwise", c.name)
		}
	}
	if g, w := got.String(), dataLines(string(want)); g != w {
		t.Errorf("Bloomery answers otherwise than the recorded RedisBloom:\n%s", firstDiff(g, w))
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %.300s\n want %.300s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// TestRedisBloomModuleChains runs the chains in the module of
// $BLOOMERY_REDISBLOOM and checks (or records) testdata.
func TestRedisBloomModuleChains(t *testing.T) {
	m := startRedisBloom(t)
	b := m.recordingHead("answers for chains made by hand", "TestRedisBloomModuleChains",
		"# Each case: BF.LOADCHUNK of a dump header made by hand (redisbloom_chain_test.go), one\n"+
			"# BF.MADD of its items (1, 0, F: non scaling filter is full, E: problem inserting into\n"+
			"# filter), its BF.SCANDUMP (header, bits; hex), BF.MEXISTS of 200 other items.\n")
	for _, c := range rbChainCases(t) {
		b.WriteString(m.chain(t, c).lines(c.name))
	}
	if os.Getenv(rbGeometryRecordEnv) == "1" {
		if err := os.WriteFile(rbChainsFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s", rbChainsFile)
		return
	}
	want, err := os.ReadFile(rbChainsFile)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := dataLines(b.String()), dataLines(string(want)); g != w {
		t.Errorf("RedisBloom %d answers otherwise than recorded:\n%s", m.version, firstDiff(g, w))
	}
}

// chain is what the module answers for c.
func (m *rbModule) chain(t *testing.T, c rbChainCase) rbChainRecord {
	t.Helper()
	m.do(t, "DEL", "chain")
	m.do(t, "BF.LOADCHUNK", "chain", 1, c.header)
	args := []any{"BF.MADD", "chain"}
	for i := range c.items {
		args = append(args, rbItem("item", i))
	}
	replies, err := m.c.Do(m.ctx, args...).Slice()
	if err != nil {
		t.Fatalf("%s: BF.MADD: %v", c.name, err)
	}
	var r rbChainRecord
	var madd strings.Builder
	for _, v := range replies {
		switch v := v.(type) {
		case int64:
			madd.WriteString(fmt.Sprint(v))
		case error:
			switch v.Error() {
			case "ERR non scaling filter is full":
				madd.WriteByte('F')
			case "ERR problem inserting into filter":
				madd.WriteByte('E')
			default:
				t.Fatalf("%s: BF.MADD element %v", c.name, v)
			}
		}
	}
	r.madd = madd.String()
	chunks := m.scanDump(t, "chain")
	r.header = hex.EncodeToString(chunks[0].data)
	for _, ch := range chunks[1:] {
		r.bits += hex.EncodeToString(ch.data)
	}
	probes := []any{"BF.MEXISTS", "chain"}
	for i := range 200 {
		probes = append(probes, rbItem("probe", i))
	}
	var exists strings.Builder
	for _, v := range m.do(t, probes...).([]any) {
		exists.WriteString(fmt.Sprint(v))
	}
	r.exists = exists.String()
	return r
}

// rbChainFilters are the chains of rbChainCases, loaded and given a few
// items: seeds for the decoders' fuzz targets.
func rbChainFilters(f *testing.F) []*Scalable {
	var out []*Scalable
	for _, c := range rbChainCases(f) {
		s, err := LoadRedisBloomHeader(c.header)
		if err != nil {
			f.Fatal(err)
		}
		for i := range min(c.items, 20) {
			s.AddString(rbItem("item", i)) // full and cannot-grow chains refuse some
		}
		out = append(out, s)
	}
	return out
}
