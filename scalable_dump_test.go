package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/bloomery/bloom/internal/encio"
)

// dumpCase is a filter shape the dump and clone tests run over.
type dumpCase struct {
	name  string
	items int
	so    Growth
	opts  []Option
}

var dumpCases = []dumpCase{
	{"empty", 0, Growth{}, nil},
	{"blocked grown", 1000, Growth{}, nil},
	{"classic grown", 700, Growth{}, []Option{WithLayout(Classic)}},
	{"keyed", 400, Growth{}, []Option{WithKey(fuzzKey)}},
	{"concurrent", 600, Growth{}, []Option{WithConcurrent()}},
	{"keyed concurrent classic", 300, Growth{}, []Option{WithKey(fuzzKey), WithConcurrent(), WithLayout(Classic)}},
	{"redisbloom x3", 900, Growth{RedisBloom: true, Expansion: 3}, nil},
	{"nonscaling", 50, Growth{NonScaling: true}, nil},
	{"redisbloom layout concurrent", 900, Growth{Expansion: 3}, []Option{WithLayout(RedisBloom), WithConcurrent()}},
	{"redisbloom layout nonscaling", 50, Growth{NonScaling: true}, []Option{WithLayout(RedisBloom)}},
}

// loadOpts are the options that read c's filter back: its key and mode.
func (c dumpCase) loadOpts() []Option {
	var opts []Option
	for _, o := range c.opts {
		if cfg := o(config{}); cfg.keyed || cfg.concurrent {
			opts = append(opts, o)
		}
	}
	return opts
}

// encodeScalable is s.MarshalBinary, which must not fail.
func encodeScalable(t testing.TB, s *Scalable) []byte {
	t.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// addKeys adds prefix0 … prefix(n−1) to s.
func addKeys(t testing.TB, s *Scalable, prefix string, n int) {
	t.Helper()
	for i := range n {
		if _, err := s.AddString(fmt.Sprintf("%s%d", prefix, i)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestScalableClone(t *testing.T) {
	for _, c := range dumpCases {
		t.Run(c.name, func(t *testing.T) {
			s := grownScalable(t, c.items, c.so, c.opts...)
			hookCalls := 0
			s.SetGrowHook(func(uint64) error { hookCalls++; return nil })
			orig := encodeScalable(t, s)
			cl := s.Clone()
			if got := encodeScalable(t, cl); !bytes.Equal(got, orig) {
				t.Fatal("the clone encodes differently")
			}
			if cl.Info() != s.Info() || cl.TargetFPR() != s.TargetFPR() {
				t.Fatalf("clone info %+v, want %+v", cl.Info(), s.Info())
			}
			for i, f := range cl.filters() {
				o := s.filters()[i]
				if f.Concurrent() != o.Concurrent() || f.Keyed() != o.Keyed() || f.Layout() != o.Layout() {
					t.Fatalf("sub-filter %d: clone concurrent=%v keyed=%v %s, original %v %v %s",
						i, f.Concurrent(), f.Keyed(), f.Layout(), o.Concurrent(), o.Keyed(), o.Layout())
				}
				if &f.words()[0] == &o.words()[0] {
					t.Fatalf("sub-filter %d shares its bit array", i)
				}
			}
			if c.so.NonScaling {
				return // full: nothing more can be added
			}
			// Adds to the clone (growing it) leave the original alone.
			addKeys(t, cl, "clone", 500)
			if !bytes.Equal(encodeScalable(t, s), orig) {
				t.Fatal("adding to the clone changed the original")
			}
			if hookCalls != 0 {
				t.Fatalf("the clone's growth called the original's hook %d times", hookCalls)
			}
			// And adds to the original leave the clone alone.
			cloned, nf := encodeScalable(t, cl), s.NumFilters()
			addKeys(t, s, "orig", 500)
			if !bytes.Equal(encodeScalable(t, cl), cloned) {
				t.Fatal("adding to the original changed the clone")
			}
			if hookCalls != s.NumFilters()-nf {
				t.Fatalf("the original's hook was called %d times for %d growths", hookCalls, s.NumFilters()-nf)
			}
			for i := range c.items {
				if k := fmt.Sprintf("key%d", i); !cl.TestString(k) {
					t.Fatalf("clone lost %q", k)
				}
			}
		})
	}
}

// TestScalableCloneDuringAdds clones while another goroutine adds: every
// clone is one whole state (its encoding decodes, so the counts agree
// with the capacities), and the race detector sees no unsynchronised copy.
func TestScalableCloneDuringAdds(t *testing.T) {
	for _, opts := range [][]Option{nil, {WithConcurrent()}} {
		s := grownScalable(t, 0, Growth{}, opts...)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			addKeys(t, s, "key", 3000)
		}()
		for range 20 {
			if _, err := LoadScalable(bytes.NewReader(encodeScalable(t, s.Clone()))); err != nil {
				t.Fatalf("clone taken during adds is not a whole state: %v", err)
			}
		}
		wg.Wait()
	}
}

// subPayloads returns the concatenated bit arrays of the sub-filters in
// the encoding data, and where each sub-filter's kind-1 header starts.
func subPayloads(t *testing.T, data []byte) (payload []byte, headers []int) {
	t.Helper()
	for at := headerSize + scalableParams; at < len(data); {
		m := binary.LittleEndian.Uint64(data[at+16:])
		headers = append(headers, at)
		payload = append(payload, data[at+headerSize:at+headerSize+int(m/8)]...)
		at += headerSize + int(m/8) + trailerSize
	}
	return payload, headers
}

// chunkers cut [0, size) into chunks of s's payload in several ways.
var chunkers = []struct {
	name string
	next func(s *Scalable, off int64) int64 // the end of the chunk at off
}{
	{"1 byte", func(_ *Scalable, off int64) int64 { return off + 1 }},
	{"7 bytes", func(_ *Scalable, off int64) int64 { return off + 7 }},
	{"1000 bytes (spanning)", func(_ *Scalable, off int64) int64 { return off + 1000 }},
	{"whole", func(s *Scalable, _ int64) int64 { return s.PayloadSize() }},
	{"100 bytes within segments", func(s *Scalable, off int64) int64 {
		_, end, ok := s.PayloadSegment(off)
		if !ok {
			panic("chunk outside the payload")
		}
		return min(off+100, end)
	}},
	{"segments", func(s *Scalable, off int64) int64 {
		_, end, _ := s.PayloadSegment(off)
		return end
	}},
}

func TestScalableDumpRoundTrip(t *testing.T) {
	for _, c := range dumpCases {
		s := grownScalable(t, c.items, c.so, c.opts...)
		data := encodeScalable(t, s)
		want, subStarts := subPayloads(t, data)
		hdr := s.DumpHeader()
		if len(hdr) != headerSize+scalableParams+headerSize*s.NumFilters() {
			t.Fatalf("%s: DumpHeader has %d bytes for %d sub-filters", c.name, len(hdr), s.NumFilters())
		}
		if !bytes.Equal(hdr[:headerSize+scalableParams], data[:headerSize+scalableParams]) {
			t.Fatalf("%s: DumpHeader does not start with the encoding's header and parameters", c.name)
		}
		for i, at := range subStarts {
			got := hdr[headerSize+scalableParams+i*headerSize:][:headerSize]
			if !bytes.Equal(got, data[at:at+headerSize]) {
				t.Fatalf("%s: sub-filter %d's header differs from its encoding's", c.name, i)
			}
		}
		if s.PayloadSize() != int64(len(want)) {
			t.Fatalf("%s: PayloadSize %d, want %d", c.name, s.PayloadSize(), len(want))
		}
		for _, ch := range chunkers {
			t.Run(c.name+"/"+ch.name, func(t *testing.T) {
				g, err := LoadScalableHeader(hdr, c.loadOpts()...)
				if err != nil {
					t.Fatal(err)
				}
				if g.Info() != s.Info() || g.PayloadSize() != s.PayloadSize() {
					t.Fatalf("loaded info %+v, want %+v", g.Info(), s.Info())
				}
				zero := make([]byte, g.PayloadSize())
				if _, err := g.ReadPayloadAt(zero, 0); err != io.EOF || !encio.AllZero(zero) {
					t.Fatalf("a loaded header's payload is not all zero (err %v)", err)
				}
				var read []byte
				for off := int64(0); off < s.PayloadSize(); {
					end := min(ch.next(s, off), s.PayloadSize())
					buf := make([]byte, end-off)
					if n, err := s.ReadPayloadAt(buf, off); n != len(buf) || (err != nil && err != io.EOF) {
						t.Fatalf("ReadPayloadAt(%d bytes at %d) = %d, %v", len(buf), off, n, err)
					}
					if n, err := g.WritePayloadAt(buf, off); n != len(buf) || err != nil {
						t.Fatalf("WritePayloadAt(%d bytes at %d) = %d, %v", len(buf), off, n, err)
					}
					read = append(read, buf...)
					off = end
				}
				if !bytes.Equal(read, want) {
					t.Fatal("ReadPayloadAt's chunks are not the sub-filters' payloads")
				}
				if got := encodeScalable(t, g); !bytes.Equal(got, data) {
					t.Fatal("header + payload chunks encode differently from the original")
				}
				for i := range c.items {
					if k := fmt.Sprintf("key%d", i); !g.TestString(k) {
						t.Fatalf("rebuilt filter lost %q", k)
					}
				}
				if gc, sc := g.filters()[0].Concurrent(), s.filters()[0].Concurrent(); gc != sc {
					t.Fatalf("rebuilt concurrent=%v, want %v", gc, sc)
				}
			})
		}
	}
}

// fixDumpCRCs recomputes every CRC of a dump header: the kind-2 header,
// the parameters and each whole sub-filter header in d.
func fixDumpCRCs(d []byte) []byte {
	d = bytes.Clone(d)
	le := binary.LittleEndian
	for at := 0; at+headerSize <= len(d); at += headerSize {
		le.PutUint32(d[at+60:], crc32.Checksum(d[at:at+60], castagnoli))
	}
	return d
}

func TestLoadScalableHeaderErrors(t *testing.T) {
	s := grownScalable(t, 200, Growth{}) // 3 sub-filters
	hdr := s.DumpHeader()
	le := binary.LittleEndian
	sub := func(i int) int { return headerSize + scalableParams + i*headerSize }
	edit := func(fn func(d []byte)) []byte {
		d := bytes.Clone(hdr)
		fn(d)
		return fixDumpCRCs(d)
	}
	flip := func(at int) []byte { d := bytes.Clone(hdr); d[at] ^= 1; return d }
	full := encodeScalable(t, s)
	cases := []struct {
		name string
		data []byte
		opts []Option
		want error
	}{
		{"empty", nil, nil, ErrFormat},
		{"header only", hdr[:headerSize], nil, ErrFormat},
		{"no sub-filter headers", hdr[:sub(0)], nil, ErrFormat},
		{"truncated", hdr[:len(hdr)-1], nil, ErrFormat},
		{"last sub-filter missing", hdr[:sub(2)], nil, ErrFormat},
		{"trailing byte", append(bytes.Clone(hdr), 0), nil, ErrFormat},
		{"a sub-filter too many", append(bytes.Clone(hdr), hdr[sub(2):]...), nil, ErrFormat},
		{"the full encoding", full, nil, ErrFormat},
		{"header CRC", flip(20), nil, ErrChecksum},
		{"parameters CRC", flip(headerSize + 3), nil, ErrChecksum},
		{"sub-filter CRC", flip(sub(1) + 33), nil, ErrChecksum},
		{"sub-filter magic", edit(func(d []byte) { d[sub(1)] = 'X' }), nil, ErrFormat},
		{"sub-filter kind 2", edit(func(d []byte) { d[sub(1)+10] = kindScalable }), nil, ErrFormat},
		{"count mismatch", edit(func(d []byte) { le.PutUint64(d[48:], 7) }), nil, ErrFormat},
		{"sub-filter count mismatch", edit(func(d []byte) { le.PutUint64(d[sub(2)+48:], 3) }), nil, ErrFormat},
		{"full sub-filter not full", edit(func(d []byte) {
			le.PutUint64(d[sub(0)+48:], 49)
			le.PutUint64(d[48:], le.Uint64(d[48:])-1)
		}), nil, ErrFormat},
		{"sub-filter capacity", edit(func(d []byte) { le.PutUint64(d[sub(1)+32:], 101) }), nil, ErrFormat},
		{"sub-filter layout", edit(func(d []byte) { d[sub(1)+11] ^= uint8(Blocked) ^ uint8(Classic) }), nil, ErrFormat},
		{"sub-filter layout 3", edit(func(d []byte) { d[sub(1)+11] = uint8(RedisBloom) }), nil, ErrFormat},
		{"sub-filter k 0", edit(func(d []byte) { le.PutUint32(d[sub(1)+24:], 0) }), nil, ErrFormat},
		{"sub-filter m odd", edit(func(d []byte) { le.PutUint64(d[sub(1)+16:], 1000) }), nil, ErrFormat},
		{"sub-filter keyed", edit(func(d []byte) { d[sub(1)+12], d[sub(1)+13] = 2, 1 }), nil, ErrKeyRequired},
		{"nonscaling with 3", edit(func(d []byte) { clear(d[headerSize : headerSize+8]) }), nil, ErrFormat},
		{"unkeyed read with a key", hdr, []Option{WithKey(fuzzKey)}, ErrWrongKey},
		{"too large", hdr, []Option{WithMaxBytes(s.Bytes() - 1)}, ErrTooLarge},
	}
	for _, c := range cases {
		g, err := LoadScalableHeader(c.data, c.opts...)
		if !errors.Is(err, c.want) || g != nil {
			t.Errorf("%s: (%v, %v), want error %v", c.name, g, err, c.want)
		}
	}
	if _, err := LoadScalableHeader(hdr, WithMaxBytes(s.Bytes())); err != nil {
		t.Errorf("a filter of exactly the limit: %v", err)
	}
	keyed := grownScalable(t, 100, Growth{}, WithKey(fuzzKey)).DumpHeader()
	if _, err := LoadScalableHeader(keyed); !errors.Is(err, ErrKeyRequired) {
		t.Errorf("keyed header without the key: %v", err)
	}
	if _, err := LoadScalableHeader(keyed, WithKey([16]byte{1})); !errors.Is(err, ErrWrongKey) {
		t.Errorf("keyed header with another key: %v", err)
	}
}

// TestLoadScalableHeaderSizeBeforeAlloc declares sub-filters whose sizes
// each fit the limit but whose sum does not: the loader must refuse them
// before allocating the first one. And a declared size beyond any limit
// is refused without an attempt to allocate it.
func TestLoadScalableHeaderSizeBeforeAlloc(t *testing.T) {
	s := grownScalable(t, 60, Growth{}) // 2 sub-filters
	const subBytes = 48 << 20
	d := bytes.Clone(s.DumpHeader())
	for i := range 2 {
		at := headerSize + scalableParams + i*headerSize
		binary.LittleEndian.PutUint64(d[at+16:], 8*subBytes)
	}
	d = fixDumpCRCs(d)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := LoadScalableHeader(d, WithMaxBytes(subBytes*3/2))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("2 × 48 MiB against a 72 MiB limit: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("refusing a too-large header allocated %d bytes", got)
	}
	// 2^59 bytes, allowed by WithMaxBytes but over the hard ceiling.
	for i := range 2 {
		at := headerSize + scalableParams + i*headerSize
		binary.LittleEndian.PutUint64(d[at+16:], 1<<62)
	}
	if _, err := LoadScalableHeader(fixDumpCRCs(d), WithMaxBytes(math.MaxUint64)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 2^59-byte sub-filter: %v", err)
	}
	// The sizes as declared, within the limit, are what it allocates.
	g, err := LoadScalableHeader(fixDumpCRCs(s.DumpHeader()), WithMaxBytes(s.Bytes()))
	if err != nil || g.Bytes() != s.Bytes() {
		t.Fatalf("valid header: %v, %d bytes, want %d", err, g.Bytes(), s.Bytes())
	}
}

func TestScalablePayloadBounds(t *testing.T) {
	s := grownScalable(t, 200, Growth{})
	size := s.PayloadSize()
	if size != int64(s.Bytes()) {
		t.Fatalf("PayloadSize %d, Bytes %d", size, s.Bytes())
	}
	reads := []struct {
		name   string
		off    int64
		len    int
		wantN  int
		wantIO error // nil or io.EOF; other errors: wantErr
		err    bool
	}{
		{"negative", -1, 4, 0, nil, true},
		{"inside", 10, 4, 4, nil, false},
		{"spanning sub-filters", 120, 20, 20, nil, false},
		{"empty", 3, 0, 0, nil, false},
		{"to the end", size - 4, 4, 4, io.EOF, false},
		{"past the end", size - 4, 10, 4, io.EOF, false},
		{"at the end", size, 4, 0, io.EOF, false},
		{"beyond", size + 10, 4, 0, io.EOF, false},
	}
	for _, c := range reads {
		n, err := s.ReadPayloadAt(make([]byte, c.len), c.off)
		if n != c.wantN || (c.err && (err == nil || err == io.EOF)) || (!c.err && err != c.wantIO) {
			t.Errorf("ReadPayloadAt %s: (%d, %v), want %d, %v", c.name, n, err, c.wantN, c.wantIO)
		}
	}
	before := encodeScalable(t, s)
	count := s.Count()
	ones := bytes.Repeat([]byte{0xff}, 16)
	for _, c := range []struct {
		name string
		off  int64
		len  int
	}{{"negative", -1, 4}, {"spanning the end", size - 4, 8}, {"at the end", size, 1}, {"beyond", size + 8, 0}} {
		if n, err := s.WritePayloadAt(ones[:c.len], c.off); n != 0 || !errors.Is(err, ErrInvalidSize) {
			t.Errorf("WritePayloadAt %s: (%d, %v), want 0, ErrInvalidSize", c.name, n, err)
		}
	}
	if !bytes.Equal(encodeScalable(t, s), before) {
		t.Fatal("a refused WritePayloadAt changed the filter")
	}
	// Writes that succeed: across the sub-filter boundary at 128, and up to the end.
	for _, off := range []int64{120, size - 16, size} {
		n := min(16, int(size-off))
		if got, err := s.WritePayloadAt(ones[:n], off); got != n || err != nil {
			t.Fatalf("WritePayloadAt(%d at %d): (%d, %v)", n, off, got, err)
		}
		back := make([]byte, n)
		if _, err := s.ReadPayloadAt(back, off); !bytes.Equal(back, ones[:n]) || (err != nil && err != io.EOF) {
			t.Fatalf("read back %x, %v after writing %d bytes at %d", back, err, n, off)
		}
	}
	if s.Count() != count {
		t.Fatalf("WritePayloadAt changed Count from %d to %d", count, s.Count())
	}
}

func TestScalablePayloadSegment(t *testing.T) {
	s := grownScalable(t, 1000, Growth{})
	var start int64
	for i, f := range s.filters() {
		end := start + int64(f.Bytes())
		for _, off := range []int64{start, start + 1, end - 1} {
			a, b, ok := s.PayloadSegment(off)
			if !ok || a != start || b != end {
				t.Fatalf("PayloadSegment(%d) = %d, %d, %v; want sub-filter %d's [%d, %d)", off, a, b, ok, i, start, end)
			}
		}
		start = end
	}
	for _, off := range []int64{-1, start, start + 100, math.MaxInt64} {
		if a, b, ok := s.PayloadSegment(off); ok {
			t.Fatalf("PayloadSegment(%d) = %d, %d, true outside a payload of %d", off, a, b, start)
		}
	}
}

func TestScalableGrowHook(t *testing.T) {
	s := grownScalable(t, 50, Growth{}) // sub-filter 0 full
	var calls []uint64
	s.SetGrowHook(func(extra uint64) error { calls = append(calls, extra); return nil })
	addKeys(t, s, "key", 400) // grows to 4 sub-filters
	fs := s.filters()
	if len(calls) != len(fs)-1 {
		t.Fatalf("%d hook calls for %d growths", len(calls), len(fs)-1)
	}
	for i, extra := range calls {
		if extra != fs[i+1].Bytes() {
			t.Fatalf("hook call %d: %d bytes, the sub-filter has %d", i, extra, fs[i+1].Bytes())
		}
	}
	// Fill the last sub-filter, then refuse the next growth.
	for i := 400; s.filters()[s.NumFilters()-1].Inserted() < s.filters()[s.NumFilters()-1].Cap(); i++ {
		if _, err := s.AddString(fmt.Sprintf("key%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	errBudget := errors.New("over budget")
	var refused []uint64
	s.SetGrowHook(func(extra uint64) error { refused = append(refused, extra); return errBudget })
	count, nf, before := s.Count(), s.NumFilters(), encodeScalable(t, s)
	added, err := s.AddString("one more")
	if err != errBudget || added {
		t.Fatalf("add past a refusing hook: (%v, %v), want (false, errBudget)", added, err)
	}
	if s.Count() != count || s.NumFilters() != nf || !bytes.Equal(encodeScalable(t, s), before) {
		t.Fatalf("a refused growth changed the filter: count %d→%d, filters %d→%d", count, s.Count(), nf, s.NumFilters())
	}
	if len(refused) != 1 {
		t.Fatalf("refusing hook called %d times for one growth", len(refused))
	}
	// Items already present are no growth: the hook is not asked.
	if added, err := s.AddString("key3"); added || err != nil || len(refused) != 1 {
		t.Fatalf("re-adding a present item: (%v, %v), %d hook calls", added, err, len(refused))
	}
	s.SetGrowHook(nil)
	if added, err := s.AddString("one more"); !added || err != nil || s.NumFilters() != nf+1 {
		t.Fatalf("without a hook: (%v, %v), %d sub-filters", added, err, s.NumFilters())
	}
	if s.filters()[nf].Bytes() != refused[0] {
		t.Fatalf("the refused hook was offered %d bytes, the sub-filter has %d", refused[0], s.filters()[nf].Bytes())
	}
}

// TestScalableGrowHookAfterSizeCheck: growth beyond WithMaxBytes fails
// with ErrTooLarge without asking the hook.
func TestScalableGrowHookAfterSizeCheck(t *testing.T) {
	s := grownScalable(t, 0, Growth{}, WithMaxBytes(200))
	called := false
	s.SetGrowHook(func(uint64) error { called = true; return nil })
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		_, err = s.AddString(fmt.Sprintf("key%d", i))
	}
	if !errors.Is(err, ErrTooLarge) || called {
		t.Fatalf("growth past the limit: %v, hook called %v", err, called)
	}
}

// TestScalableGrowHookConcurrent swaps the hook while goroutines add.
func TestScalableGrowHookConcurrent(t *testing.T) {
	s := grownScalable(t, 0, Growth{}, WithConcurrent())
	var mu sync.Mutex
	var charged uint64
	charge := func(extra uint64) error { mu.Lock(); charged += extra; mu.Unlock(); return nil }
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addKeys(t, s, fmt.Sprintf("g%d-", g), 1000)
		}()
	}
	for i := range 200 {
		if i%2 == 0 {
			s.SetGrowHook(charge)
		} else {
			s.SetGrowHook(nil)
		}
	}
	s.SetGrowHook(charge)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if charged > s.Bytes()-s.filters()[0].Bytes() {
		t.Fatalf("charged %d bytes for %d bytes of growth", charged, s.Bytes()-s.filters()[0].Bytes())
	}
}

// FuzzLoadScalableHeader feeds arbitrary bytes to LoadScalableHeader:
// no input makes it panic, every error carries a sentinel, and a header it
// accepts re-dumps to the same bytes and makes a usable, all-zero filter.
// Each input is also tried with all its CRCs recomputed, so mutations
// reach the field checks.
func FuzzLoadScalableHeader(f *testing.F) {
	for _, s := range append([]*Scalable{
		grownScalable(f, 0, Growth{}),
		grownScalable(f, 120, Growth{}),
		grownScalable(f, 400, Growth{RedisBloom: true, Expansion: 3}, WithLayout(Classic)),
		grownScalable(f, 60, Growth{}, WithKey(fuzzKey)),
		grownScalable(f, 50, Growth{NonScaling: true}, WithLayout(Classic)),
		grownScalable(f, 200, Growth{Expansion: 3}, WithLayout(RedisBloom)),
	}, rbChainFilters(f)...) {
		h := s.DumpHeader()
		f.Add(h)
		f.Add(h[:len(h)-headerSize])
		f.Add(append(bytes.Clone(h), h[len(h)-headerSize:]...))
		d := bytes.Clone(h)
		binary.LittleEndian.PutUint64(d[len(d)-headerSize+16:], 1<<40) // a huge last sub-filter
		f.Add(fixDumpCRCs(d))
	}
	for _, data := range goldenV1Files(f) { // version 1: every sub-filter blocked
		if s, err := LoadScalable(bytes.NewReader(data)); err == nil {
			f.Add(s.DumpHeader())
			f.Add(fixDumpCRCs(setVersion(s.DumpHeader(), formatVersionSmall)))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLoadScalableHeader(t, data)
		if fixed := fixDumpCRCs(data); !bytes.Equal(fixed, data) {
			checkLoadScalableHeader(t, fixed)
		}
	})
}

func checkLoadScalableHeader(t *testing.T, data []byte) {
	for _, opts := range [][]Option{{WithMaxBytes(fuzzMaxBytes)}, {WithMaxBytes(fuzzMaxBytes), WithKey(fuzzKey), WithConcurrent()}} {
		s, err := LoadScalableHeader(data, opts...)
		if err != nil {
			if !isSentinel(err) || s != nil {
				t.Fatalf("(%v, %v): error without a sentinel, or a filter with an error", s, err)
			}
			continue
		}
		checkScalableFields(t, s)
		if again := s.DumpHeader(); !bytes.Equal(again, data) {
			t.Fatalf("re-dump differs:\n in  %x\n out %x", data, again)
		}
		if s.PayloadSize() != int64(s.Bytes()) || s.Bytes() > fuzzMaxBytes {
			t.Fatalf("payload %d bytes, Bytes %d, limit %d", s.PayloadSize(), s.Bytes(), fuzzMaxBytes)
		}
		if s.TestString("probe") && !anyHashless(s) {
			t.Fatal("an all-zero filter with hashes answers true")
		}
		// With its payloads, it is an encoding the full reader accepts.
		if _, err := LoadScalable(bytes.NewReader(encodeScalable(t, s)), opts...); err != nil {
			t.Fatalf("LoadScalable refuses what LoadScalableHeader accepted: %v", err)
		}
		if _, err := s.AddString("fuzz"); err == nil && !s.TestString("fuzz") {
			t.Fatal("loaded filter lost an item just added")
		}
	}
}
