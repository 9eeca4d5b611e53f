package bloom

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// A dump taken chunk by chunk loads back into the same filter, and no
// chunk crosses from one sub-filter into the next; sub-filters larger than
// MaxDumpChunk come in several chunks.
func TestDumpChunksRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n0    uint64
		items int
	}{
		{"one small", 100, 50},
		{"grown", 100, 5000},
		{"large", 20_000_000, 1000}, // a 24 MB sub-filter: two chunks
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewScalable(tc.n0, 0.01, WithRedisBloomSplit())
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.items {
				s.Add(fmt.Appendf(nil, "%d", i))
			}
			want, _ := s.MarshalBinary()
			next, hdr, err := s.DumpChunk(0)
			if err != nil || next != 1 {
				t.Fatalf("header: next %d, %v", next, err)
			}
			g, err := LoadScalableHeader(hdr)
			if err != nil {
				t.Fatal(err)
			}
			chunks := 0
			for it := next; ; {
				next, chunk, err := s.DumpChunk(it)
				if err != nil {
					t.Fatal(err)
				}
				if next == 0 {
					if chunk != nil {
						t.Fatal("a chunk with iterator 0")
					}
					break
				}
				if next != it+int64(len(chunk)) || len(chunk) == 0 || len(chunk) > MaxDumpChunk {
					t.Fatalf("chunk at %d: %d bytes, next %d", it, len(chunk), next)
				}
				start, end, _ := s.PayloadSegment(it - 1)
				if next-1 > end || it-1 < start {
					t.Fatalf("chunk [%d, %d) crosses sub-filter [%d, %d)", it-1, next-1, start, end)
				}
				if err := g.LoadChunk(next, chunk); err != nil {
					t.Fatal(err)
				}
				chunks++
				it = next
			}
			got, _ := g.MarshalBinary()
			if !bytes.Equal(got, want) {
				t.Fatal("the loaded filter differs")
			}
			if tc.name == "large" && chunks < 2 {
				t.Fatalf("%d chunks for a 24 MB sub-filter", chunks)
			}
			if next, chunk, _ := s.DumpChunk(-5); next != 0 || chunk != nil {
				t.Fatal("a negative iterator gave a chunk")
			}
		})
	}
}

// LoadChunk refuses a chunk that does not lie inside one sub-filter at
// its iterator, and writes nothing then.
func TestLoadChunkRefuses(t *testing.T) {
	s, _ := NewScalable(100, 0.01, WithRedisBloomSplit())
	for i := range 300 {
		s.Add(fmt.Appendf(nil, "%d", i))
	}
	if s.NumFilters() < 2 {
		t.Fatal("want two sub-filters")
	}
	_, end, _ := s.PayloadSegment(0)
	before, _ := s.MarshalBinary()
	for _, c := range []struct {
		it  int64
		len int
	}{
		{0, 1}, {-1, 1}, {5, 10}, // before the start
		{end + 1 + 8, 16},           // across the first sub-filter's end
		{s.PayloadSize() + 2, 1},    // past the end
		{s.PayloadSize() + 100, 10}, // far past the end
	} {
		err := s.LoadChunk(c.it, bytes.Repeat([]byte{0xff}, c.len))
		if !errors.Is(err, ErrInvalidSize) {
			t.Errorf("iterator %d, %d bytes: %v, want ErrInvalidSize", c.it, c.len, err)
		}
	}
	if after, _ := s.MarshalBinary(); !bytes.Equal(before, after) {
		t.Fatal("a refused chunk changed the filter")
	}
	if err := s.LoadChunk(1, nil); err != nil {
		t.Fatalf("an empty chunk at the start: %v", err)
	}
}

// LoadChunk takes any iterator and bytes without a panic, and changes the
// filter only where it says it did.
func FuzzLoadChunk(f *testing.F) {
	f.Add(int64(1), []byte{})
	f.Add(int64(200), []byte("abc"))
	f.Add(int64(-3), []byte("x"))
	f.Fuzz(func(t *testing.T, it int64, chunk []byte) {
		s, _ := NewScalable(100, 0.01, WithRedisBloomSplit())
		before := s.PayloadSize()
		if err := s.LoadChunk(it, chunk); err != nil && !errors.Is(err, ErrInvalidSize) {
			t.Fatalf("error %v does not wrap ErrInvalidSize", err)
		}
		if s.PayloadSize() != before {
			t.Fatal("LoadChunk changed the payload's size")
		}
	})
}
