package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll splits r with an itemReader and returns the items and batch
// sizes.
func readAll(t *testing.T, r io.Reader, sep byte) (items []string, batches []int, err error) {
	t.Helper()
	ir := newItemReader(sep)
	ir.reset(r)
	for {
		batch, err := ir.next()
		if err == io.EOF {
			return items, batches, nil
		}
		if err != nil {
			return items, batches, err
		}
		for _, it := range batch {
			if cap(it) != len(it) {
				t.Fatalf("item %q has spare capacity %d: an append would overwrite the next item", it, cap(it)-len(it))
			}
			items = append(items, string(it))
		}
		batches = append(batches, len(batch))
	}
}

func TestItemReader(t *testing.T) {
	long := strings.Repeat("x", 3*readBufSize+17) // grows the buffer twice
	tests := []struct {
		name  string
		in    string
		sep   byte
		items []string
	}{
		{"empty", "", '\n', nil},
		{"one newline", "\n", '\n', []string{""}},
		{"lines", "a\nbb\nccc\n", '\n', []string{"a", "bb", "ccc"}},
		{"no final newline", "a\nb", '\n', []string{"a", "b"}},
		{"empty lines", "\n\na\n\n", '\n', []string{"", "", "a", ""}},
		{"CR kept", "a\r\nb\r\n", '\n', []string{"a\r", "b\r"}},
		{"NUL", "a\nb\x00c\x00d", 0, []string{"a\nb", "c", "d"}},
		{"NUL keeps newlines", "x\n", 0, []string{"x\n"}},
		{"long line", "a\n" + long + "\nb\n", '\n', []string{"a", long, "b"}},
		{"long last line", long, '\n', []string{long}},
	}
	for _, tt := range tests {
		for _, wrap := range []struct {
			name string
			r    func(io.Reader) io.Reader
		}{
			{"whole", func(r io.Reader) io.Reader { return r }},
			{"one byte", iotest.OneByteReader},
			{"data with EOF", iotest.DataErrReader},
			{"half", iotest.HalfReader},
		} {
			if wrap.name == "one byte" && len(tt.in) > 1000 {
				continue
			}
			t.Run(tt.name+"/"+wrap.name, func(t *testing.T) {
				got, _, err := readAll(t, wrap.r(strings.NewReader(tt.in)), tt.sep)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.items) {
					t.Errorf("items %.200q, want %.200q", got, tt.items)
				}
			})
		}
	}
}

func TestItemReaderBatches(t *testing.T) {
	var in strings.Builder
	const n = 3*maxBatch + 5
	for i := range n {
		fmt.Fprintf(&in, "%d\n", i)
	}
	items, batches, err := readAll(t, strings.NewReader(in.String()), '\n')
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != n || items[n-1] != fmt.Sprint(n-1) {
		t.Fatalf("%d items, last %q", len(items), items[len(items)-1])
	}
	for _, b := range batches {
		if b > maxBatch {
			t.Errorf("batch of %d items, more than %d", b, maxBatch)
		}
	}
}

func TestItemReaderErrors(t *testing.T) {
	boom := errors.New("boom")
	_, _, err := readAll(t, io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom)), '\n')
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want %v", err, boom)
	}

	// An item longer than maxItemBytes is refused, not buffered without
	// end.
	_, _, err = readAll(t, io.LimitReader(repeatByte('x'), maxItemBytes+1), '\n')
	if err == nil || !strings.Contains(err.Error(), "longer than 64.0 MiB") {
		t.Errorf("error %v for an item of more than 64 MiB", err)
	}
}

type repeatByte byte

func (r repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestItemReaderAllocs: reading items allocates nothing once the buffers
// exist.
func TestItemReaderAllocs(t *testing.T) {
	data := bytes.Repeat([]byte("some item\nanother one\n"), 100_000)
	ir := newItemReader('\n')
	r := bytes.NewReader(data)
	allocs := testing.AllocsPerRun(10, func() {
		r.Reset(data)
		ir.reset(r)
		for {
			if _, err := ir.next(); err != nil {
				break
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per pass over %d bytes", allocs, len(data))
	}
}

func BenchmarkItemReader(b *testing.B) {
	var in bytes.Buffer
	for i := range 1_000_000 {
		fmt.Fprintf(&in, "user-%d@example.com\n", i)
	}
	data := in.Bytes()
	ir := newItemReader('\n')
	r := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(data)
		ir.reset(r)
		for {
			if _, err := ir.next(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ns/item")
}

// FuzzItemReader: the items are those of bytes.Split, less the empty one
// after a final separator, whatever the separator and read sizes.
func FuzzItemReader(f *testing.F) {
	f.Add([]byte("a\nb\n\nc"), false, uint8(1))
	f.Add([]byte("a\x00b\nc\x00"), true, uint8(3))
	f.Add([]byte{}, false, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, nul bool, chunk uint8) {
		sep := separator(nul)
		var want []string
		if len(data) > 0 {
			for _, it := range bytes.Split(bytes.TrimSuffix(data, []byte{sep}), []byte{sep}) {
				want = append(want, string(it))
			}
		}
		var r io.Reader = bytes.NewReader(data)
		if chunk > 0 {
			r = &chunkReader{r: r, n: int(chunk)}
		}
		got, _, err := readAll(t, r, sep)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Errorf("items %q, want %q", got, want)
		}
	})
}

// chunkReader returns at most n bytes a read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }
