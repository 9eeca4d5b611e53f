package cuckoo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// fuzzLimit keeps what a fuzzed input may allocate small.
const fuzzLimit = 1 << 16

// Load never panics; what it accepts re-encodes to the same bytes.
func FuzzLoad(f *testing.F) {
	for _, fl := range []*Filter{mustNew(f, 4), filled(f)} {
		b, _ := fl.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		g, err := Load(r, WithMaxBytes(fuzzLimit))
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		out, err := g.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(b) - r.Len(); !bytes.Equal(out, b[:n]) {
			t.Fatalf("re-encoding differs from the %d bytes read", n)
		}
		exercise(g, out)
	})
}

// LoadDumpHeader and LoadChunk never panic, and whatever they load can
// be used: however odd its counters, expansion or bytes.
func FuzzLoadDumpHeader(f *testing.F) {
	fl := filled(f)
	dump := scanDump(fl)
	f.Add(dump[0].data, dump[1].it, dump[1].data, []byte("ops"))
	f.Add(dumpHeaderBytes(3, 4, 9, 3, 3, 2, 3), int64(13), []byte("abcdefghijkl"), []byte("xyz"))
	f.Add(dumpHeaderBytes(0, 2, 0, 65537, 1, 1, 0), int64(3), []byte("zz"), []byte{})
	f.Fuzz(func(t *testing.T, hdr []byte, it int64, chunk, ops []byte) {
		g, err := LoadDumpHeader(hdr, WithMaxBytes(fuzzLimit))
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if err := g.LoadChunk(it, chunk); err != nil && !errors.Is(err, ErrChunk) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		// Every operation visits every sub-filter, and an insert into a
		// full filter kicks up to MaxIterations times: thousands of
		// either make a slow input, not a finding (a fuzz worker that
		// takes seconds on one input is reported as hung).
		if in := g.Info(); in.Filters <= 64 {
			if in.MaxIterations > 512 && len(ops) > 64 {
				ops = ops[:64]
			}
			exercise(g, ops)
		}
	})
}

// exercise runs every operation on g, driven by ops, to find panics.
func exercise(g *Filter, ops []byte) {
	for i := 0; i+2 <= len(ops); i += 2 {
		item := ops[i+1 : i+2]
		switch ops[i] % 6 {
		case 0:
			g.Add(item)
		case 1:
			g.AddUnique(item)
		case 2:
			g.Delete(item)
		case 3:
			g.Count(item)
		case 4:
			g.Compact()
		default:
			g.Test(item)
		}
	}
	for it := int64(0); ; {
		next, _ := g.ScanDump(it)
		if next == 0 {
			break
		}
		it = next
	}
	g.Info()
}

// Any sequence of adds and deletes of added items leaves no false
// negative, and Count at least the copies added.
func FuzzOperations(f *testing.F) {
	f.Add(uint8(2), uint8(1), uint8(20), []byte("aabbccaaddeeff"))
	f.Add(uint8(1), uint8(0), uint8(1), []byte("0123456789012345678901234567890123456789"))
	f.Fuzz(func(t *testing.T, bs, exp, iters uint8, ops []byte) {
		g, err := New(16, WithBucketSize(uint64(bs%8+1)), WithExpansion(uint64(exp%4)),
			WithMaxIterations(uint64(iters)+1), WithMaxBytes(fuzzLimit))
		if err != nil {
			t.Skip()
		}
		copies := map[uint16]uint64{}
		for i := 0; i+2 <= len(ops); i += 2 {
			v := binary.LittleEndian.Uint16(ops[i:]) & 0x7fff
			item := binary.LittleEndian.AppendUint16(nil, v%64)
			if v&1 == 1 && copies[v%64] > 0 {
				if !g.Delete(item) {
					t.Fatalf("Delete of an added item %d found nothing", v%64)
				}
				copies[v%64]--
			} else if g.Add(item) == nil {
				copies[v%64]++
			}
		}
		for v, n := range copies {
			item := binary.LittleEndian.AppendUint16(nil, v)
			if n > 0 && !g.Test(item) || g.Count(item) < n {
				t.Fatalf("item %d added %d times: Test %v Count %d", v, n, g.Test(item), g.Count(item))
			}
		}
	})
}
