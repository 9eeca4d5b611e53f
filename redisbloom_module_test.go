package bloom

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Tests against a real RedisBloom: set BLOOMERY_REDISBLOOM to a module
// file (.so) that the installed redis-server can --loadmodule. Without
// it they skip; everything they check that does not need a live module
// is also checked against the facts recorded from one (testdata).

// redisBloomEnv names the module file the tests load.
const redisBloomEnv = "BLOOMERY_REDISBLOOM"

// rbModule is a redis-server with RedisBloom loaded.
type rbModule struct {
	c       *redis.Client
	ctx     context.Context
	version int64 // MODULE LIST's ver: 20820 for 2.8.20, 999999 for an 8.x build
}

// startRedisBloom starts a redis-server with the module of
// $BLOOMERY_REDISBLOOM, or skips the test when it is not set.
func startRedisBloom(t *testing.T) *rbModule {
	t.Helper()
	path := os.Getenv(redisBloomEnv)
	if path == "" {
		t.Skipf("%s is not set: set it to a RedisBloom module (.so) to run the tests against a real RedisBloom", redisBloomEnv)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s: %v", redisBloomEnv, err)
	}
	srv := redistest.Start(t, "--loadmodule", path)
	m := &rbModule{c: redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, ReadTimeout: time.Minute}), ctx: context.Background()}
	t.Cleanup(func() { m.c.Close() })
	mods, err := m.c.Do(m.ctx, "MODULE", "LIST").Slice()
	if err != nil {
		t.Fatal(err)
	}
	for _, mod := range mods {
		if kv, ok := mod.([]any); ok && len(kv) >= 4 && kv[1] == "bf" {
			m.version, _ = kv[3].(int64)
		}
	}
	if m.version == 0 {
		t.Fatalf("MODULE LIST shows no bf module: %v", mods)
	}
	return m
}

// do runs one command and fails the test on an error.
func (m *rbModule) do(t *testing.T, args ...any) any {
	t.Helper()
	v, err := m.c.Do(m.ctx, args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// rbChunk is one BF.SCANDUMP reply: the data and the iterator it came
// back with (BF.LOADCHUNK's argument for it).
type rbChunk struct {
	it   int64
	data []byte
}

// scanDump is BF.SCANDUMP of key from iterator 0 to the end: the header
// first, then every data chunk.
func (m *rbModule) scanDump(t *testing.T, key string) []rbChunk {
	t.Helper()
	var out []rbChunk
	for it := int64(0); ; {
		v := m.do(t, "BF.SCANDUMP", key, it).([]any)
		next, data := v[0].(int64), v[1].(string)
		if next == 0 {
			return out
		}
		out = append(out, rbChunk{next, []byte(data)})
		it = next
	}
}

// goDump is DumpChunk of s from iterator 0 to the end, as scanDump.
func goDump(t *testing.T, s *Scalable) []rbChunk {
	t.Helper()
	var out []rbChunk
	for it := int64(0); ; {
		next, chunk, err := s.DumpChunk(it)
		if err != nil {
			t.Fatal(err)
		}
		if next == 0 {
			return out
		}
		out = append(out, rbChunk{next, chunk})
		it = next
	}
}

// loadDump loads chunks (a header, then data) into a new Scalable.
func loadDump(t *testing.T, chunks []rbChunk) *Scalable {
	t.Helper()
	s, err := LoadDumpHeader(chunks[0].data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks[1:] {
		if err := s.LoadChunk(c.it, c.data); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// sameDump fails the test unless a and b are the same chunks.
func sameDump(t *testing.T, what string, a, b []rbChunk) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d chunks and %d", what, len(a), len(b))
	}
	for i := range a {
		if a[i].it != b[i].it || string(a[i].data) != string(b[i].data) {
			t.Fatalf("%s: chunk %d differs: iterator %d (%d bytes) and %d (%d bytes)",
				what, i, a[i].it, len(a[i].data), b[i].it, len(b[i].data))
		}
	}
}

// rbInfo is BF.INFO key as a map of its five fields (nil expansion: -1).
func (m *rbModule) info(t *testing.T, key string) map[string]int64 {
	t.Helper()
	v := m.do(t, "BF.INFO", key).([]any)
	out := map[string]int64{}
	for i := 0; i+1 < len(v); i += 2 {
		n, ok := v[i+1].(int64)
		if !ok {
			n = -1
		}
		out[v[i].(string)] = n
	}
	return out
}

// goInfo is s's summary in BF.INFO's terms.
func goInfo(s *Scalable) map[string]int64 {
	in := s.Info()
	exp := int64(in.Expansion)
	if in.NonScaling {
		exp = -1
	}
	return map[string]int64{"Capacity": int64(in.Capacity), "Size": int64(in.RedisBloomSize()),
		"Number of filters": int64(in.Filters), "Number of items inserted": int64(in.Items), "Expansion rate": exp}
}

// rbLinkGeometry reads sub-filter i's geometry from a raw RedisBloom dump
// header, with no help from the decoder under test.
func rbLinkGeometry(hdr []byte, i int) (bytes, bits uint64, hashes uint32, bpeBits uint64) {
	le := binary.LittleEndian
	l := hdr[rbChainSize+rbLinkSize*i:]
	return le.Uint64(l[0:]), le.Uint64(l[8:]), le.Uint32(l[40:]), le.Uint64(l[32:])
}

// madd adds items to key in batches, as BF.MADD.
func (m *rbModule) madd(t *testing.T, key string, items []string) {
	t.Helper()
	for len(items) > 0 {
		n := min(len(items), 1000)
		args := []any{"BF.MADD", key}
		for _, it := range items[:n] {
			args = append(args, it)
		}
		m.do(t, args...)
		items = items[n:]
	}
}

// mexists is BF.MEXISTS of items, as bools.
func (m *rbModule) mexists(t *testing.T, key string, items []string) []bool {
	t.Helper()
	var out []bool
	for len(items) > 0 {
		n := min(len(items), 1000)
		args := []any{"BF.MEXISTS", key}
		for _, it := range items[:n] {
			args = append(args, it)
		}
		for _, v := range m.do(t, args...).([]any) {
			out = append(out, v.(int64) == 1)
		}
		items = items[n:]
	}
	return out
}

// rbItems are n distinct items named after prefix.
func rbItems(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s:%d", prefix, from+i)
	}
	return out
}

// reserveArgs are BF.RESERVE's arguments after the key for c.
func (c rbCase) reserveArgs() []any {
	args := []any{fmt.Sprint(c.p), c.n}
	if c.exp != 0 {
		args = append(args, "EXPANSION", c.exp)
	}
	if c.nonScaling {
		args = append(args, "NONSCALING")
	}
	return args
}

// rbCase is a filter both sides make with the same parameters.
type rbCase struct {
	n          uint64
	p          float64
	exp        uint64 // 0: the default, 2
	nonScaling bool
	items      int
}

func (c rbCase) String() string {
	return strings.NewReplacer(" ", "_").Replace(fmt.Sprintf("n=%d p=%g exp=%d ns=%v items=%d", c.n, c.p, c.exp, c.nonScaling, c.items))
}

// newScalable is NewScalable with c's parameters, as BF.RESERVE makes it.
func (c rbCase) newScalable(t *testing.T) *Scalable {
	t.Helper()
	g := Growth{Expansion: c.exp, NonScaling: c.nonScaling}
	if g.Expansion == 0 {
		g.Expansion = 2 // BF.RESERVE's default, recorded even when non-scaling
	}
	s, err := NewScalable(c.n, c.p, WithLayout(RedisBloom), WithGrowth(g))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var rbCases = []rbCase{
	{n: 100, p: 0.01, items: 0},
	{n: 100, p: 0.01, items: 50},
	{n: 100, p: 0.01, items: 3000},            // 5 sub-filters
	{n: 1000, p: 0.001, exp: 4, items: 30000}, // 3 sub-filters
	{n: 10, p: 0.1, exp: 1, items: 200},       // growth 1: 20 sub-filters of 10
	{n: 7, p: 0.0001, items: 2000},            // 9 sub-filters
	{n: 2000, p: 0.001, nonScaling: true, items: 2000},
	{n: 50, p: 0.2, nonScaling: true, items: 40},
	{n: 2_000_000, p: 0.01, items: 20000},  // a bit array of 2.5 MiB: one chunk
	{n: 20_000_000, p: 0.01, items: 20000}, // 25 MiB: two chunks
}
