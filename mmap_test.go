package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// Tests of OpenFile and MappedFilter (mmap.go).

// writeFile writes data to a new file in a test directory and returns its
// path.
func writeFile(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "filter.bloom")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// openFileT opens path with OpenFile and closes it when the test ends.
func openFileT(t testing.TB, path string, opts ...Option) *MappedFilter {
	t.Helper()
	m, err := OpenFile(path, opts...)
	if err != nil {
		t.Fatalf("OpenFile: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func TestOpenFileAnswersLikeLoad(t *testing.T) {
	for _, v := range allVariants() {
		for _, size := range []struct{ n, add uint64 }{{1000, 700}, {300_000, 200_000}} {
			t.Run(fmt.Sprintf("%v/n=%d", v, size.n), func(t *testing.T) {
				orig := filled(t, v, size.n, 0.01, int(size.add))
				var file bytes.Buffer
				if _, err := orig.WriteTo(&file); err != nil {
					t.Fatal(err)
				}
				var opts []Option
				if v.keyed {
					opts = append(opts, WithKey(testKey))
				}
				m := openFileT(t, writeFile(t, file.Bytes()), opts...)
				if want := littleEndian && runtime.GOOS != "windows"; m.Mapped() != want {
					t.Errorf("Mapped() = %v, want %v", m.Mapped(), want)
				}
				if m.f.concurrent {
					t.Error("mapped filter is concurrent: its reads would use atomics for nothing")
				}
				// Same geometry, count, words, and answers for present and
				// absent items as the original.
				sameFilter(t, orig, m.f, int(size.add))
				if m.Sizing() != orig.Sizing() || m.Inserted() != orig.Inserted() || m.Keyed() != v.keyed ||
					m.HashID() != orig.HashID() || m.Bits() != orig.Bits() || m.K() != orig.K() ||
					m.Cap() != orig.Cap() || m.TargetFPR() != orig.TargetFPR() || m.Layout() != orig.Layout() ||
					m.Bytes() != orig.Bytes() || m.EncodedSize() != int64(file.Len()) {
					t.Errorf("mapped filter %v (inserted %d) differs from %v (inserted %d)",
						m.Sizing(), m.Inserted(), orig.Sizing(), orig.Inserted())
				}
				if m.FillRatio() != orig.FillRatio() || m.Count() != orig.Count() || m.EstimatedFPR() != orig.EstimatedFPR() {
					t.Errorf("statistics differ: fill %v/%v count %d/%d rate %v/%v",
						m.FillRatio(), orig.FillRatio(), m.Count(), orig.Count(), m.EstimatedFPR(), orig.EstimatedFPR())
				}

				// The public Test methods, one by one and in batches.
				items := append(genItems("item", 1000), genItems("absent", 1000)...)
				for i := range 1000 {
					items[i] = itemKey(nil, uint64(i))
				}
				got := m.TestMany(items, nil)
				for i, it := range items {
					want := orig.Test(it)
					if got[i] != want || m.Test(it) != want || m.TestString(string(it)) != want || m.TestHash(m.Hash(it)) != want {
						t.Fatalf("item %q: TestMany %v, Test %v, TestString %v, want %v",
							it, got[i], m.Test(it), m.TestString(string(it)), want)
					}
				}
				hs := make([]Hash, len(items))
				for i, it := range items {
					hs[i] = m.Hash(it)
				}
				dst := make([]bool, len(hs))
				m.TestHashes(hs, dst)
				if !slices.Equal(dst, got) {
					t.Error("TestHashes differs from TestMany")
				}

				// WriteTo and ReadAt give the file's bytes back.
				var again bytes.Buffer
				if _, err := m.WriteTo(&again); err != nil || !bytes.Equal(again.Bytes(), file.Bytes()) {
					t.Errorf("WriteTo: %v, bytes equal %v", err, bytes.Equal(again.Bytes(), file.Bytes()))
				}
				payload := make([]byte, m.Bytes())
				if n, _ := m.ReadAt(payload, 0); n != len(payload) || !bytes.Equal(payload, file.Bytes()[headerSize:headerSize+len(payload)]) {
					t.Errorf("ReadAt: %d bytes, want the %d bytes of the payload", n, len(payload))
				}
			})
		}
	}
}

// TestOpenFileAligned checks that the mapped words are 64-byte aligned, so
// each block is one cache line, as in a filter made by New.
func TestOpenFileAligned(t *testing.T) {
	m := openFileT(t, writeFile(t, mustMarshal(t, filled(t, variant{Blocked, false, false}, 10_000, 0.01, 10))))
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(m.f.words()))); p%64 != 0 {
		t.Errorf("words at %#x, not 64-byte aligned", p)
	}
}

func TestOpenFileRefuses(t *testing.T) {
	le := binary.LittleEndian
	good := mustMarshal(t, filled(t, variant{Blocked, false, false}, 1000, 0.01, 100))
	keyed := mustMarshal(t, filled(t, variant{Blocked, true, false}, 1000, 0.01, 100))
	flip := func(data []byte, at int) []byte {
		c := bytes.Clone(data)
		c[at] ^= 0x10
		return c
	}
	scalable, err := NewScalable(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	scalableBytes, err := scalable.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	counting, err := NewCounting(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	countingBytes, err := counting.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		data []byte
		opts []Option
		want error
		msg  string // the error contains this
	}{
		{"empty file", nil, nil, ErrFormat, "reading header"},
		{"short header", good[:40], nil, ErrFormat, "reading header"},
		{"not a filter", []byte(strings.Repeat("not a bloom filter\n", 10)), nil, ErrFormat, "bad magic"},
		{"header CRC", flip(good, 20), nil, ErrChecksum, "header CRC"},
		{"payload CRC", flip(good, headerSize+7), nil, ErrChecksum, "payload CRC"},
		{"trailer CRC", flip(good, len(good)-8), nil, ErrChecksum, "payload CRC"},
		{"reserved trailer", flip(good, len(good)-2), nil, ErrFormat, "reserved trailer"},
		{"truncated payload", good[:headerSize+10], nil, ErrFormat, "truncated"},
		{"truncated trailer", good[:len(good)-1], nil, ErrFormat, "truncated"},
		{"bytes after", append(bytes.Clone(good), 0), nil, ErrFormat, "1 bytes after the filter"},
		{"bad k", withHeader(good, func(h []byte) { le.PutUint32(h[24:], 0) }), nil, ErrInvalidK, "hash count"},
		{"scalable", scalableBytes, nil, ErrFormat, "a Scalable filter"},
		{"counting", countingBytes, nil, ErrFormat, "a Counting filter"},
		{"keyed without key", keyed, nil, ErrKeyRequired, "keyed"},
		{"keyed with wrong key", keyed, []Option{WithKey(otherKey)}, ErrWrongKey, "key"},
		{"unkeyed with key", good, []Option{WithKey(testKey)}, ErrWrongKey, "not keyed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.data)
			m, err := OpenFile(path, tt.opts...)
			if err == nil {
				m.Close()
				t.Fatal("OpenFile succeeded")
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), path) {
				t.Errorf("OpenFile: %v\nwant an error wrapping %v that contains %q and the path", err, tt.want, tt.msg)
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		_, err := OpenFile(filepath.Join(t.TempDir(), "nope.bloom"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenFile: %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		if _, err := OpenFile(t.TempDir()); err == nil {
			t.Error("OpenFile of a directory succeeded")
		}
	})
}

// TestOpenFileSkipPayloadCRC: skipping the CRC opens a file whose payload
// is corrupt (and that is the whole cost: its answers are those of the
// corrupt bits), but never one whose header or size is wrong.
func TestOpenFileSkipPayloadCRC(t *testing.T) {
	orig := filled(t, variant{Blocked, false, false}, 1000, 0.01, 100)
	good := mustMarshal(t, orig)
	bad := bytes.Clone(good)
	bad[headerSize] ^= 1
	skip := WithoutPayloadCRC()

	m, err := OpenFile(writeFile(t, bad), skip)
	if err != nil {
		t.Fatalf("OpenFile(WithoutPayloadCRC()) of a corrupt payload: %v", err)
	}
	if m.f.words()[0] != orig.words()[0]^1 {
		t.Errorf("word 0 = %#x, want the corrupt %#x", m.f.words()[0], orig.words()[0]^1)
	}
	m.Close()

	badHeader := bytes.Clone(good)
	badHeader[20] ^= 1
	for name, data := range map[string][]byte{
		"header CRC": badHeader,
		"truncated":  good[:len(good)-8],
	} {
		if m, err := OpenFile(writeFile(t, data), skip); err == nil {
			m.Close()
			t.Errorf("%s: OpenFile(WithoutPayloadCRC()) succeeded", name)
		}
	}
}

func TestOpenFileClose(t *testing.T) {
	m, err := OpenFile(writeFile(t, mustMarshal(t, filled(t, variant{Classic, false, false}, 1000, 0.01, 10))))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Test(itemKey(nil, 3)) {
		t.Fatal("false negative")
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if m.Mapped() {
		t.Error("Mapped() after Close")
	}
}

// TestOpenFileReplaced: renaming a new file over an open one leaves the
// open filter on the old bits.
func TestOpenFileReplaced(t *testing.T) {
	path := writeFile(t, mustMarshal(t, filled(t, variant{Blocked, false, false}, 1000, 0.01, 100)))
	m := openFileT(t, path)
	empty := mustMarshal(t, filled(t, variant{Blocked, false, false}, 1000, 0.01, 0))
	tmp := path + ".new"
	if err := os.WriteFile(tmp, empty, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	for i := range uint64(100) {
		if !m.Test(itemKey(nil, i)) {
			t.Fatalf("item %d absent after the file was replaced", i)
		}
	}
}

// BenchmarkMappedTestMany compares TestMany on a mapped file with the same
// filter loaded into memory, at 16 MiB (larger than the caches).
func BenchmarkMappedTestMany(b *testing.B) {
	f := filled(b, variant{Blocked, false, false}, 10_000_000, 0.01, 1_000_000)
	path := writeFile(b, mustMarshal(b, f))
	m := openFileT(b, path)
	loaded, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer loaded.Close()
	heap, err := Load(loaded)
	if err != nil {
		b.Fatal(err)
	}
	items := genItems("probe", 4096)
	dst := make([]bool, len(items))
	for _, bc := range []struct {
		name string
		test func([][]byte, []bool) []bool
	}{{"mapped", m.TestMany}, {"loaded", heap.TestMany}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst = bc.test(items, dst)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/item")
		})
	}
}

// BenchmarkOpenFile is the cost of opening a 64 MiB filter from the page
// cache, with and without the payload CRC check.
func BenchmarkOpenFile(b *testing.B) {
	s, err := Size(50_000_000, 0.01, Blocked)
	if err != nil {
		b.Fatal(err)
	}
	f := newSizedT(b, s)
	path := writeFile(b, mustMarshal(b, f))
	for _, skip := range []bool{false, true} {
		name := "verify"
		if skip {
			name = "skip-crc"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(f.Bytes()))
			for b.Loop() {
				var opts []Option
				if skip {
					opts = append(opts, WithoutPayloadCRC())
				}
				m, err := OpenFile(path, opts...)
				if err != nil {
					b.Fatal(err)
				}
				m.Close()
			}
		})
	}
}

// FuzzOpenFile: OpenFile accepts exactly the files UnmarshalBinary
// accepts, and opens them to the same filter.
func FuzzOpenFile(f *testing.F) {
	for _, l := range []Layout{Blocked, Classic} {
		good := mustMarshal(f, filled(f, variant{l, false, false}, 100, 0.01, 30))
		f.Add(good)
		f.Add(good[:len(good)-1])
		f.Add(append(bytes.Clone(good), 0))
		bad := bytes.Clone(good)
		bad[headerSize+1] ^= 1
		f.Add(bad)
	}
	f.Add([]byte("BLOOMERY"))
	dir := fuzzDir(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.bloom")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var want Filter
		wantErr := want.UnmarshalBinary(data)
		m, err := OpenFile(path)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("OpenFile error %v, UnmarshalBinary error %v", err, wantErr)
		}
		if err != nil {
			return
		}
		defer m.Close()
		if m.Sizing() != want.Sizing() || m.Inserted() != want.Inserted() || !slices.Equal(m.f.words(), want.words()) {
			t.Fatalf("OpenFile gave %v (inserted %d), UnmarshalBinary %v (inserted %d), or other bits",
				m.Sizing(), m.Inserted(), want.Sizing(), want.Inserted())
		}
	})
}
