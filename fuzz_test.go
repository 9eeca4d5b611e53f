package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"
)

// fuzzKey is the key of the keyed seeds; FuzzUnmarshal also decodes every
// input with it, so mutations of keyed encodings get past the key check.
var fuzzKey = [16]byte{'f', 'u', 'z', 'z', 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}

// fuzzMaxBytes bounds what a fuzz input can make the decoder allocate.
const fuzzMaxBytes = 1 << 20

// FuzzUnmarshal feeds arbitrary bytes to the decoders. Properties:
//   - no input makes them panic, and every error is one of the package's
//     sentinels;
//   - a successful decode re-encodes to exactly the bytes it consumed (so
//     the format has one encoding per filter, and every field is checked);
//   - Load from a bytes.Reader (which checks sizes against the bytes
//     left) and from a plain stream agree on success, and UnmarshalBinary
//     succeeds exactly when Load does and consumes all of the input;
//   - a decoded filter is usable (Add, Test, Count).
//
// The header and payload CRCs would stop almost every mutation at the
// checksum, so each input is also tried with both CRCs recomputed, which
// lets the fuzzer reach the field checks and the payload.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		if fixed := fixCRCs(data); fixed != nil {
			checkDecode(t, fixed)
		}
	})
}

func fuzzSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	var valid [][]byte
	for _, l := range []Layout{Blocked, Classic} {
		for _, keyed := range []bool{false, true} {
			opts := []Option{WithLayout(l)}
			if keyed {
				opts = append(opts, WithKey(fuzzKey))
			}
			for _, n := range []uint64{3, 100} {
				f, err := New(n, 0.01, opts...)
				if err != nil {
					tb.Fatal(err)
				}
				for _, s := range []string{"apple", "banana", "cherry"} {
					f.AddString(s)
				}
				b, err := f.MarshalBinary()
				if err != nil {
					tb.Fatal(err)
				}
				valid = append(valid, b)
			}
		}
	}
	rb, err := New(100, 0.01, WithLayout(RedisBloom))
	if err != nil {
		tb.Fatal(err)
	}
	rb.AddString("apple")
	b, err := rb.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	valid = append(valid, b)
	seeds = append(seeds, valid...)
	v := valid[0]
	flip := func(at int) []byte { c := bytes.Clone(v); c[at] ^= 0x10; return c }
	seeds = append(seeds,
		nil,
		v[:headerSize/2],
		v[:headerSize],
		v[:len(v)-trailerSize],
		v[:len(v)-1],
		append(bytes.Clone(v), 0),
		append(bytes.Clone(v), valid[1]...),
		flip(12),                             // hash id
		flip(headerSize),                     // payload
		flip(len(v)-2),                       // trailer reserved
		bigHeader(1<<60),                     // too large
		append(bigHeader(8<<30), "short"...), // 1 GiB declared, truncated
	)
	return seeds
}

// fixCRCs returns data with its header CRC and, if the header's m fits in
// data, its payload CRC recomputed; nil if data is shorter than a header.
func fixCRCs(data []byte) []byte {
	if len(data) < headerSize {
		return nil
	}
	le := binary.LittleEndian
	d := bytes.Clone(data)
	le.PutUint32(d[60:], crc32.Checksum(d[:60], castagnoli))
	if m := le.Uint64(d[16:]); len(d) >= headerSize+trailerSize && m%8 == 0 && m/8 <= uint64(len(d)-headerSize-trailerSize) {
		end := headerSize + int(m/8)
		le.PutUint32(d[end:], crc32.Checksum(d[headerSize:end], castagnoli))
	}
	if bytes.Equal(d, data) {
		return nil
	}
	return d
}

var decodeSentinels = []error{ErrFormat, ErrChecksum, ErrTooLarge, ErrKeyRequired, ErrWrongKey}

func checkDecode(t *testing.T, data []byte) {
	checkDecoding(t, data, Load,
		func(opts []Option) (*Filter, error) {
			// NewSized: New's exact sizing would dominate the time per input.
			return NewSized(Sizing{Layout: Classic, N: 10, P: 0.1, Bits: 64, K: 3}, opts...)
		},
		func(t *testing.T, g *Filter) {
			if err := g.Sizing().CheckRate(); err != nil || g.Inserted() > g.Bits() {
				t.Fatalf("decoded %v with %d items: %v", g.Sizing(), g.Inserted(), err)
			}
			g.Test([]byte("probe"))
			g.AddString("fuzz")
			if !g.TestString("fuzz") {
				t.Fatal("decoded filter lost an item just added")
			}
			_ = g.Count()
		})
}

// decodable is what the decoder contract needs of a filter kind.
type decodable interface {
	Concurrent() bool
	Keyed() bool
	Bytes() uint64
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// checkDecoding checks the decoders of one filter kind on data, with and
// without a key and WithConcurrent: load from a bytes.Reader and from a
// stream agree; errors carry a sentinel; UnmarshalBinary (into a receiver
// from newRecv) fails where load does, unless only the size limit
// differs; what decodes re-encodes to the bytes consumed, and use can
// work with it.
func checkDecoding[T decodable](t *testing.T, data []byte, load func(io.Reader, ...Option) (T, error),
	newRecv func(opts []Option) (T, error), use func(t *testing.T, g T)) {
	for _, mode := range []struct {
		keyed, concurrent bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		opts := []Option{WithMaxBytes(fuzzMaxBytes)}
		if mode.keyed {
			opts = append(opts, WithKey(fuzzKey))
		}
		if mode.concurrent {
			opts = append(opts, WithConcurrent())
		}
		r := bytes.NewReader(data)
		g, err := load(r, opts...)
		_, errStream := load(streamOnly{bytes.NewReader(data)}, opts...)
		if (err == nil) != (errStream == nil) {
			t.Fatalf("load from bytes.Reader: %v; from a stream: %v", err, errStream)
		}
		// UnmarshalBinary has the default size limit, but a bytes.Reader
		// bounds what it allocates by the input's length.
		recv, rerr := newRecv(opts)
		if rerr != nil {
			t.Fatal(rerr)
		}
		uerr := recv.UnmarshalBinary(data)
		if err != nil {
			if !isSentinel(err) || !isSentinel(errStream) || (uerr != nil && !isSentinel(uerr)) {
				t.Fatalf("error without a sentinel: %v / %v / %v", err, errStream, uerr)
			}
			if uerr == nil && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("UnmarshalBinary succeeded where load failed: %v", err)
			}
			continue
		}
		if g.Concurrent() != mode.concurrent || g.Keyed() != mode.keyed {
			t.Fatalf("decoded filter: concurrent=%v keyed=%v, want %v %v", g.Concurrent(), g.Keyed(), mode.concurrent, mode.keyed)
		}
		consumed := len(data) - r.Len()
		again, merr := g.MarshalBinary()
		if merr != nil {
			t.Fatal(merr)
		}
		if !bytes.Equal(again, data[:consumed]) {
			t.Fatalf("re-encoding differs from the %d bytes decoded:\n in  %x\n out %x", consumed, data[:consumed], again)
		}
		if (uerr == nil) != (consumed == len(data)) {
			t.Fatalf("UnmarshalBinary: %v, with %d bytes after the encoding", uerr, len(data)-consumed)
		}
		if uerr == nil && recv.Bytes() != g.Bytes() {
			t.Fatalf("UnmarshalBinary and load disagree: %d vs %d bytes", recv.Bytes(), g.Bytes())
		}
		use(t, g)
	}
}

func isSentinel(err error) bool {
	for _, s := range decodeSentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
