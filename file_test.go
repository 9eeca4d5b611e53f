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
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bloomery/bloom/cuckoo"
)

// Tests of filter files of any kind (file.go): Kind, KindError, LoadAny,
// OpenAny and File.

// anyKinds is one filter of each kind, holding items [0, 300), with its
// encoding.
func anyKinds(t testing.TB) []struct {
	kind Kind
	data []byte
	test func([]byte) bool
} {
	return someKinds(t, 300)
}

// someKinds is one filter of each kind holding items [0, n): a Filter
// and a Counting filter for 3n/2 items, a Scalable filter grown from n/3
// (to three sub-filters), a cuckoo filter of RedisBloom's defaults for n.
func someKinds(t testing.TB, n uint64) []struct {
	kind Kind
	data []byte
	test func([]byte) bool
} {
	t.Helper()
	f := filled(t, variant{Blocked, false, false}, 3*n/2, 0.01, int(n))
	s, err := NewScalable(n/3, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	c := newCountingT(t, 3*n/2, 0.01)
	cf := newCuckooT(t, n)
	var buf [64]byte
	for i := range n {
		if _, err := s.Add(itemKey(buf[:], i)); err != nil {
			t.Fatal(err)
		}
		c.Add(itemKey(buf[:], i))
		if err := cf.Add(itemKey(buf[:], i)); err != nil {
			t.Fatal(err)
		}
	}
	sData, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return []struct {
		kind Kind
		data []byte
		test func([]byte) bool
	}{
		{KindFilter, mustMarshal(t, f), f.Test},
		{KindScalable, sData, s.Test},
		{KindCounting, mustMarshalCounting(t, c), c.Test},
		{KindCuckoo, mustMarshalCuckoo(t, cf), cf.Test},
	}
}

// checkFile checks that got holds a filter of kind answering as test
// does, in that kind's field only.
func checkFile(t *testing.T, got *File, kind Kind, size int, test func([]byte) bool) {
	t.Helper()
	set := []bool{got.Filter != nil, got.Scalable != nil, got.Counting != nil, got.Cuckoo != nil}
	if got.Kind != kind || slices.Index(set, true) != int(kind)-1 || slices.Index(set[kind:], true) >= 0 {
		t.Fatalf("kind %v with fields set %v, want %v alone", got.Kind, set, kind)
	}
	if got.EncodedSize() != int64(size) {
		t.Errorf("EncodedSize %d, want %d", got.EncodedSize(), size)
	}
	var buf [64]byte
	items := make([][]byte, 600)
	for i := range items {
		items[i] = bytes.Clone(itemKey(buf[:], uint64(i)))
	}
	answers := got.TestMany(items, nil)
	for i, it := range items {
		if answers[i] != test(it) {
			t.Fatalf("TestMany says %v for item %d, the original %v", answers[i], i, test(it))
		}
	}
}

// TestLoadAny: each kind comes back in its field, answering as the
// original, from a bytes.Reader and from a stream, and LoadAny reads the
// encoding and nothing after it.
func TestLoadAny(t *testing.T) {
	for _, k := range anyKinds(t) {
		t.Run(k.kind.String(), func(t *testing.T) {
			r := bytes.NewReader(append(bytes.Clone(k.data), "next"...))
			got, err := LoadAny(r)
			if err != nil {
				t.Fatal(err)
			}
			checkFile(t, got, k.kind, len(k.data), k.test)
			if r.Len() != 4 {
				t.Errorf("%d bytes left after LoadAny, want the 4 after the encoding", r.Len())
			}
			if got, err = LoadAny(streamOnly{bytes.NewReader(k.data)}); err != nil {
				t.Fatal(err)
			}
			checkFile(t, got, k.kind, len(k.data), k.test)
			if err := got.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// withKind is data with its header's kind byte set to kind and its
// header CRC made valid again.
func withKind(data []byte, kind uint8) []byte {
	d := bytes.Clone(data)
	d[10] = kind
	binary.LittleEndian.PutUint32(d[60:], crc32.Checksum(d[:60], castagnoli))
	return d
}

func TestLoadAnyErrors(t *testing.T) {
	kinds := anyKinds(t)
	f := kinds[0].data
	keyed := mustMarshal(t, filled(t, variant{Classic, true, false}, 100, 0.01, 10))
	tests := []struct {
		name string
		data []byte
		opts []Option
		want error
		msg  string
	}{
		{"empty", nil, nil, ErrFormat, "reading header: unexpected EOF"},
		{"short header", f[:30], nil, ErrFormat, "reading header: unexpected EOF"},
		{"text", []byte("hello\n"), nil, ErrFormat, `bad magic "hello\n"`},
		{"unknown kind", withKind(f, 9), nil, ErrFormat, "of unknown kind 9"},
		{"truncated", f[:len(f)-1], nil, ErrFormat, "truncated"},
		{"truncated stream", f[:len(f)-1], nil, ErrFormat, "unexpected EOF"},
		{"keyed", keyed, nil, ErrKeyRequired, ""},
		{"too large", kinds[2].data, []Option{WithMaxBytes(100)}, ErrTooLarge, ""},
		{"too large scalable", kinds[1].data, []Option{WithMaxBytes(100)}, ErrTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r io.Reader = bytes.NewReader(tt.data)
			if strings.HasSuffix(tt.name, "stream") {
				r = streamOnly{r}
			}
			got, err := LoadAny(r, tt.opts...)
			if got != nil || !errors.Is(err, tt.want) || !strings.Contains(fmt.Sprint(err), tt.msg) {
				t.Errorf("LoadAny = %v, %v; want %v with %q", got, err, tt.want, tt.msg)
			}
		})
	}
}

// TestKindError: a loader given another kind says which, through a
// *KindError that wraps ErrFormat.
func TestKindError(t *testing.T) {
	kinds := anyKinds(t)
	loaders := []struct {
		want Kind
		load func([]byte) error
	}{
		{KindFilter, func(b []byte) error { _, err := Load(bytes.NewReader(b)); return err }},
		{KindScalable, func(b []byte) error { _, err := LoadScalable(bytes.NewReader(b)); return err }},
		{KindCounting, func(b []byte) error { _, err := LoadCounting(bytes.NewReader(b)); return err }},
		{KindFilter, func(b []byte) error { _, err := OpenFile(writeFile(t, b)); return err }},
	}
	for _, l := range loaders {
		for _, k := range kinds {
			err := l.load(k.data)
			var ke *KindError
			switch {
			case k.kind == l.want && err != nil:
				t.Errorf("loading a %v: %v", k.kind, err)
			case k.kind == l.want:
			case !errors.As(err, &ke) || ke.Got != k.kind || ke.Want != l.want || !errors.Is(err, ErrFormat):
				t.Errorf("a %v loaded as a %v: %v, want a KindError wrapping ErrFormat", k.kind, l.want, err)
			case !strings.Contains(err.Error(), "malformed filter encoding: the encoding is "):
				t.Errorf("message %q", err)
			}
		}
	}
	for k, want := range map[Kind]string{KindFilter: "filter", KindScalable: "scalable filter", KindCounting: "counting filter", KindCuckoo: "cuckoo filter", 7: "kind 7"} {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), k.String(), want)
		}
	}
}

// TestOpenAny: a kind-1 regular file is mapped, the other kinds read;
// every kind refuses bytes after the filter; every kind is read once
// from a pipe.
func TestOpenAny(t *testing.T) {
	for _, k := range anyKinds(t) {
		t.Run(k.kind.String(), func(t *testing.T) {
			path := writeFile(t, k.data)
			got, err := OpenAny(path)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			checkFile(t, got, k.kind, len(k.data), k.test)
			if mapped := got.Filter != nil && got.Filter.Mapped(); mapped != (k.kind == KindFilter && littleEndian && runtime.GOOS != "windows") {
				t.Errorf("mapped %v", mapped)
			}

			long := writeFile(t, append(bytes.Clone(k.data), 0))
			if _, err := OpenAny(long); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "after the filter") ||
				!strings.Contains(err.Error(), long) {
				t.Errorf("one byte after the filter: %v", err)
			}

			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			go func() {
				w.Write(k.data)
				w.Close()
			}()
			fromPipe, err := openAny(r, newConfig(nil))
			if err != nil {
				t.Fatal(err)
			}
			checkFile(t, fromPipe, k.kind, len(k.data), k.test)
			if fromPipe.Filter != nil && fromPipe.Filter.Mapped() {
				t.Error("a pipe was mapped")
			}
		})
	}
	if _, err := OpenAny(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzLoadAny: LoadAny accepts exactly what the loader of the encoding's
// kind accepts, reading as many bytes, and OpenAny accepts a file of the
// same bytes exactly when nothing follows the encoding.
func FuzzLoadAny(f *testing.F) {
	for _, k := range someKinds(f, 9) { // small: quick to minimise
		f.Add(k.data)
		f.Add(k.data[:len(k.data)-1])
		f.Add(append(bytes.Clone(k.data), 0))
		f.Add(withKind(k.data, 1+uint8(k.kind)%3))
	}
	f.Add([]byte("BLOOMERY"))
	dir := fuzzDir(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := []Option{WithMaxBytes(fuzzMaxBytes)}
		r := bytes.NewReader(data)
		got, err := LoadAny(r, opts...)
		if err != nil && !isSentinel(err) {
			t.Fatalf("error without a sentinel: %v", err)
		}
		left := r.Len()
		var want error
		wr := bytes.NewReader(data)
		switch {
		case len(data) > 10 && Kind(data[10]) == KindFilter:
			_, want = Load(wr, opts...)
		case len(data) > 10 && Kind(data[10]) == KindScalable:
			_, want = LoadScalable(wr, opts...)
		case len(data) > 10 && Kind(data[10]) == KindCounting:
			_, want = LoadCounting(wr, opts...)
		case len(data) > 10 && Kind(data[10]) == KindCuckoo:
			_, want = cuckoo.Load(wr, cuckoo.WithMaxBytes(fuzzMaxBytes))
		default:
			want = ErrFormat
		}
		if (err == nil) != (want == nil) || (err == nil && left != wr.Len()) {
			t.Fatalf("LoadAny: %v, %d bytes left; the kind's loader: %v, %d left", err, left, want, wr.Len())
		}
		if err == nil && got.EncodedSize() != int64(len(data)-left) {
			t.Fatalf("EncodedSize %d after reading %d bytes", got.EncodedSize(), len(data)-left)
		}
		if len(data) > fuzzMaxBytes {
			return // OpenAny maps a Filter of any size: WithMaxBytes does not apply
		}
		path := filepath.Join(dir, "fuzz.bloom")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		opened, oerr := OpenAny(path, opts...)
		if (oerr == nil) != (err == nil && left == 0) {
			t.Fatalf("OpenAny: %v; LoadAny: %v with %d bytes after", oerr, err, left)
		}
		if oerr == nil {
			opened.Close()
		}
	})
}

// fuzzDir is a directory for the files a fuzz target writes on every
// input: in memory (/dev/shm) where there is one, since rewriting a file
// on a disk file system costs a millisecond (journal), a hundred times
// more than the decoding under test; else a test directory.
func fuzzDir(f *testing.F) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "bloom-fuzz-"); err == nil {
			f.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return f.TempDir()
}
