package bloom

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// viewFilter makes a filter of n0 items at p with n of them added.
func viewFilter(t testing.TB, n0 uint64, n int, opts ...Option) *Scalable {
	t.Helper()
	s, err := NewScalable(n0, 0.01, append([]Option{WithRedisBloomSplit()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		s.Add(fmt.Appendf(nil, "before-%d", i))
	}
	return s
}

// encodeView writes v and closes it.
func encodeView(t testing.TB, v *ScalableView) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := v.WriteTo(&b)
	if err != nil || n != int64(b.Len()) || n != v.EncodedSize() {
		t.Fatalf("WriteTo: %d bytes (%d written, EncodedSize %d), %v", n, b.Len(), v.EncodedSize(), err)
	}
	v.Close()
	return b.Bytes()
}

// A view encodes the filter as it was when it was taken, whatever is
// added, grown or loaded into it afterwards, before or while it is
// written.
func TestScalableViewIsTheInstant(t *testing.T) {
	for _, layout := range []Layout{Blocked, Classic} {
		for _, conc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/concurrent=%v", layout, conc), func(t *testing.T) {
				opts := []Option{WithLayout(layout)}
				if conc {
					opts = append(opts, WithConcurrent())
				}
				s := viewFilter(t, 20000, 15000, opts...)
				want, err := s.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				count := s.Count()
				v := s.View()
				// Changes after the instant: adds into every page, growth
				// into new sub-filters, and a payload write.
				for i := range 60000 {
					s.Add(fmt.Appendf(nil, "after-%d", i))
				}
				if s.NumFilters() < 2 {
					t.Fatal("the filter did not grow")
				}
				junk := bytes.Repeat([]byte{0xa5}, 10000)
				if _, err := s.WritePayloadAt(junk, 1000); err != nil {
					t.Fatal(err)
				}
				if got := encodeView(t, v); !bytes.Equal(got, want) {
					t.Fatal("the view differs from the filter at the instant")
				}
				back, err := LoadScalable(bytes.NewReader(want), opts...)
				if err != nil || back.Count() != count {
					t.Fatalf("the view does not load as the filter at the instant: %v", err)
				}
			})
		}
	}
}

// Adds running while the view is written do not change what it writes
// (run with -race: the view reads the bit arrays under the add lock).
func TestScalableViewConcurrentAdds(t *testing.T) {
	s := viewFilter(t, 100000, 50000, WithConcurrent())
	want, _ := s.MarshalBinary()
	v := s.View()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s.Add(fmt.Appendf(nil, "g%d-%d", g, i))
				s.Test(fmt.Appendf(nil, "before-%d", i%50000))
			}
		}()
	}
	got := encodeView(t, v)
	close(stop)
	wg.Wait()
	if !bytes.Equal(got, want) {
		t.Fatal("the view differs from the filter at the instant")
	}
}

// A view copies only the pages changed while it is open, not the filter.
func TestScalableViewCopiesOnlyChangedPages(t *testing.T) {
	s := viewFilter(t, 10_000_000, 0) // about 12 MB: 3,000 pages
	v := s.View()
	const adds = 100
	for i := range adds {
		s.Add(fmt.Appendf(nil, "x%d", i))
	}
	s.mu.Lock()
	kept := v.pages.Kept()
	s.mu.Unlock()
	if kept == 0 || kept > adds { // blocked: one page per Add at most
		t.Fatalf("%d pages kept for %d adds", kept, adds)
	}
	var b bytes.Buffer
	v.WriteTo(&b)
	s.mu.Lock()
	left := v.pages.Kept()
	s.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d kept pages left after WriteTo", left)
	}
	// Pages already written out are not kept again.
	for i := range adds {
		s.Add(fmt.Appendf(nil, "y%d", i))
	}
	s.mu.Lock()
	kept = v.pages.Kept()
	s.mu.Unlock()
	if kept != 0 {
		t.Fatalf("%d pages kept after the view was written", kept)
	}
	v.Close()
	if openViews.n.Load() != 0 {
		t.Fatalf("%d views still open", openViews.n.Load())
	}
}

// Several views at once each keep their own instant; closing one leaves
// the other working; Close twice is harmless.
func TestScalableViewsNest(t *testing.T) {
	s := viewFilter(t, 1000, 500)
	first, _ := s.MarshalBinary()
	v1 := s.View()
	for i := range 300 {
		s.Add(fmt.Appendf(nil, "mid-%d", i))
	}
	second, _ := s.MarshalBinary()
	v2 := s.View()
	for i := range 3000 {
		s.Add(fmt.Appendf(nil, "late-%d", i))
	}
	if got := encodeView(t, v2); !bytes.Equal(got, second) {
		t.Fatal("the second view differs")
	}
	v2.Close()
	for i := range 3000 {
		s.Add(fmt.Appendf(nil, "later-%d", i))
	}
	if got := encodeView(t, v1); !bytes.Equal(got, first) {
		t.Fatal("the first view differs")
	}
}

// A filter replaced by UnmarshalBinary after the view leaves the view as
// it was.
func TestScalableViewSurvivesUnmarshal(t *testing.T) {
	s := viewFilter(t, 1000, 800)
	want, _ := s.MarshalBinary()
	v := s.View()
	other, _ := viewFilter(t, 1000, 0).MarshalBinary()
	if err := s.UnmarshalBinary(other); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		s.Add(fmt.Appendf(nil, "new-%d", i))
	}
	if got := encodeView(t, v); !bytes.Equal(got, want) {
		t.Fatal("the view differs after UnmarshalBinary")
	}
}

// Without an open view an Add allocates nothing and pays no copy.
func TestScalableAddAllocsWithoutViews(t *testing.T) {
	s := viewFilter(t, 1_000_000, 0)
	item := []byte("item")
	if n := testing.AllocsPerRun(1000, func() { s.Add(item) }); n != 0 {
		t.Fatalf("%v allocations per Add", n)
	}
}

func BenchmarkScalableView(b *testing.B) {
	s := viewFilter(b, 1_000_000, 500_000)
	b.Run("Add-no-view", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			s.Add(fmt.Appendf(nil, "%d", i))
		}
	})
	b.Run("Add-view-open", func(b *testing.B) {
		v := s.View()
		defer v.Close()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			s.Add(fmt.Appendf(nil, "%d", i))
		}
	})
	b.Run("WriteTo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v := s.View()
			v.WriteTo(discard{})
			v.Close()
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
