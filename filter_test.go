package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

var ftKey = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// optVariant is one combination of the options that change a filter's code
// paths: layout, keyed hashing, atomic (concurrent) bit updates.
type optVariant struct {
	name       string
	layout     Layout
	keyed      bool
	concurrent bool
}

func (v optVariant) opts(extra ...Option) []Option {
	o := []Option{WithLayout(v.layout)}
	if v.keyed {
		o = append(o, WithKey(ftKey))
	}
	if v.concurrent {
		o = append(o, WithConcurrent())
	}
	return append(o, extra...)
}

func optVariants() []optVariant {
	var vs []optVariant
	for _, l := range []Layout{Blocked, Classic} {
		for _, keyed := range []bool{false, true} {
			for _, conc := range []bool{false, true} {
				name := l.String()
				if keyed {
					name += "/keyed"
				}
				if conc {
					name += "/concurrent"
				}
				vs = append(vs, optVariant{name, l, keyed, conc})
			}
		}
	}
	return vs
}

func newFilterT(t testing.TB, n uint64, p float64, opts ...Option) *Filter {
	t.Helper()
	f, err := New(n, p, opts...)
	if err != nil {
		t.Fatalf("New(%d, %g): %v", n, p, err)
	}
	return f
}

func newSizedT(t testing.TB, s Sizing, opts ...Option) *Filter {
	t.Helper()
	f, err := NewSized(s, opts...)
	if err != nil {
		t.Fatalf("NewSized(%v): %v", s, err)
	}
	return f
}

// genItems returns n distinct items of varied lengths (0 to 40 bytes),
// distinct from those of any other prefix.
func genItems(prefix string, n int) [][]byte {
	items := make([][]byte, n)
	for i := range items {
		b := fmt.Appendf(nil, "%s-%d-", prefix, i)
		for len(b) < i%41 {
			b = append(b, byte('a'+len(b)%26))
		}
		items[i] = b
	}
	return items
}

// u64Item is key i of a dense sequence of distinct 8-byte keys.
func u64Item(buf []byte, i uint64) []byte {
	binary.LittleEndian.PutUint64(buf, i)
	return buf[:8]
}

func TestNewErrors(t *testing.T) {
	for _, layout := range []Layout{Blocked, Classic} {
		if _, err := New(0, 0.01, WithLayout(layout)); !errors.Is(err, ErrInvalidCapacity) {
			t.Errorf("%s: New(0, 0.01) error = %v, want ErrInvalidCapacity", layout, err)
		}
		for _, p := range []float64{0, 1, -0.5, 2, math.NaN(), math.Inf(1)} {
			if f, err := New(100, p, WithLayout(layout)); !errors.Is(err, ErrInvalidRate) || f != nil {
				t.Errorf("%s: New(100, %v) = %v, %v; want nil, ErrInvalidRate", layout, p, f, err)
			}
		}
		// 10^12 items need about 1.2-1.3 TB: over the default 16 GiB limit.
		if f, err := New(1e12, 0.01, WithLayout(layout)); !errors.Is(err, ErrTooLarge) || f != nil {
			t.Errorf("%s: New(1e12, 0.01) = %v, %v; want ErrTooLarge", layout, f, err)
		}
		// 10^7 items need about 12 MB.
		_, err := New(1e7, 0.01, WithLayout(layout), WithMaxBytes(1<<20))
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: New(1e7, 0.01, WithMaxBytes(1 MiB)) error = %v, want ErrTooLarge", layout, err)
		} else if !strings.Contains(err.Error(), fmt.Sprint(1<<20)) {
			t.Errorf("%s: ErrTooLarge message %q does not name the limit", layout, err)
		}
		s, _ := Size(1e5, 0.01, layout)
		if _, err := New(1e5, 0.01, WithLayout(layout), WithMaxBytes(s.Bytes())); err != nil {
			t.Errorf("%s: a filter of exactly the limit (%d bytes) is refused: %v", layout, s.Bytes(), err)
		}
		if _, err := New(1e5, 0.01, WithLayout(layout), WithMaxBytes(s.Bytes()-1)); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: a filter one byte over the limit: error = %v, want ErrTooLarge", layout, err)
		}
	}
	if _, err := New(100, 0.01, WithLayout(Layout(9))); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("New with layout 9: error = %v, want ErrInvalidLayout", err)
	}
}

func TestNewSizedValidation(t *testing.T) {
	good := map[Layout]Sizing{
		Blocked: {Layout: Blocked, N: 100, P: 0.01, Bits: 1024, K: 6},
		Classic: {Layout: Classic, N: 100, P: 0.01, Bits: 1024, K: 6},
	}
	for _, s := range good {
		f := newSizedT(t, s)
		if f.Sizing() != s {
			t.Errorf("NewSized(%v).Sizing() = %v", s, f.Sizing())
		}
	}
	bad := []struct {
		name string
		s    Sizing
		want error // nil: any error naming the bits
	}{
		{"blocked bits 0", Sizing{Layout: Blocked, N: 100, P: 0.01, Bits: 0, K: 6}, nil},
		{"blocked bits 640", Sizing{Layout: Blocked, N: 100, P: 0.01, Bits: 640, K: 6}, nil},
		{"blocked bits 1000", Sizing{Layout: Blocked, N: 100, P: 0.01, Bits: 1000, K: 6}, nil},
		{"classic bits 0", Sizing{Layout: Classic, N: 100, P: 0.01, Bits: 0, K: 6}, nil},
		{"classic bits 100", Sizing{Layout: Classic, N: 100, P: 0.01, Bits: 100, K: 6}, nil},
		{"classic bits 1000", Sizing{Layout: Classic, N: 100, P: 0.01, Bits: 1000, K: 6}, nil},
		{"k 0", Sizing{Layout: Blocked, N: 100, P: 0.01, Bits: 1024, K: 0}, ErrInvalidK},
		{"k 65", Sizing{Layout: Blocked, N: 100, P: 0.01, Bits: 1024, K: 65}, ErrInvalidK},
		{"classic k 65", Sizing{Layout: Classic, N: 100, P: 0.01, Bits: 1024, K: 65}, ErrInvalidK},
		{"layout 0", Sizing{Layout: 0, N: 100, P: 0.01, Bits: 1024, K: 6}, ErrInvalidLayout},
		{"layout 4", Sizing{Layout: 4, N: 100, P: 0.01, Bits: 1024, K: 6}, ErrInvalidLayout},
		{"n 0", Sizing{Layout: Blocked, N: 0, P: 0.01, Bits: 1024, K: 6}, ErrInvalidCapacity},
		{"p 0", Sizing{Layout: Blocked, N: 100, P: 0, Bits: 1024, K: 6}, ErrInvalidRate},
		{"p 1", Sizing{Layout: Blocked, N: 100, P: 1, Bits: 1024, K: 6}, ErrInvalidRate},
		{"p NaN", Sizing{Layout: Classic, N: 100, P: math.NaN(), Bits: 1024, K: 6}, ErrInvalidRate},
		{"2^63 bits", Sizing{Layout: Blocked, N: 100, P: 0.01, Bits: 1 << 63, K: 6}, ErrTooLarge},
		// Issue 11: geometry that cannot hold its rate (so a decoder would
		// refuse the filter).
		{"512 bits for 1000 at 0.01", Sizing{Layout: Blocked, N: 1000, P: 0.01, Bits: 512, K: 7}, ErrGeometry},
		{"classic 1024 bits for 1000 at 0.01", Sizing{Layout: Classic, N: 1000, P: 0.01, Bits: 1024, K: 7}, ErrGeometry},
		{"k 64 at 0.01", Sizing{Layout: Blocked, N: 100, P: 0.01, Bits: 1024, K: 64}, ErrGeometry},
	}
	for _, c := range bad {
		f, err := NewSized(c.s)
		switch {
		case err == nil || f != nil:
			t.Errorf("%s: NewSized = %v, %v; want an error", c.name, f, err)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: error = %v, want %v", c.name, err, c.want)
		case c.want == nil && !strings.Contains(err.Error(), fmt.Sprintf("bits %d ", c.s.Bits)):
			t.Errorf("%s: error %q does not name the bits", c.name, err)
		}
	}
	// The layout comes from the sizing, not from WithLayout.
	f := newSizedT(t, good[Classic], WithLayout(Blocked))
	if f.Layout() != Classic {
		t.Errorf("NewSized(classic sizing, WithLayout(Blocked)) has layout %s", f.Layout())
	}
	if f := newSizedT(t, Sizing{Layout: Classic, N: 1, P: 0.5, Bits: 64, K: 1}); f.Bytes() != 8 {
		t.Errorf("smallest classic filter has %d bytes", f.Bytes())
	}
}

func TestAddReportsNew(t *testing.T) {
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			f := newFilterT(t, 2000, 1e-6, v.opts()...)
			items := genItems("add", 2000)
			news := 0
			for i, it := range items {
				if f.Test(it) {
					t.Fatalf("item %d present before it was added (empty or nearly empty filter)", i)
				}
				if f.Add(it) {
					news++
				} else if i == 0 {
					t.Fatalf("first Add into an empty filter reported not new")
				}
				if f.Add(it) {
					t.Fatalf("second Add of item %d reported new", i)
				}
				if !f.Test(it) {
					t.Fatalf("item %d absent right after Add", i)
				}
			}
			// At p = 1e-6 no item should have been a false positive.
			if news != len(items) {
				t.Errorf("%d of %d distinct items reported new", news, len(items))
			}
			if got := f.Inserted(); got != uint64(news) {
				t.Errorf("Inserted() = %d, Add reported %d new", got, news)
			}
			for i, it := range items {
				if !f.Test(it) {
					t.Fatalf("false negative for item %d", i)
				}
			}
			fp := 0
			for _, it := range genItems("absent", 20000) {
				if f.Test(it) {
					fp++
				}
			}
			if fp > 2 {
				t.Errorf("%d false positives in 20000 at p = 1e-6", fp)
			}
		})
	}
}

func TestStringMatchesBytes(t *testing.T) {
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			a := newFilterT(t, 1000, 0.01, v.opts()...)
			b := newFilterT(t, 1000, 0.01, v.opts()...)
			items := genItems("str", 500)
			for i, it := range items {
				s := string(it)
				if got := a.Hash(it); got != a.Hash([]byte(s)) {
					t.Fatal("Hash is not a function of the bytes")
				}
				na, nb := a.Add(it), b.AddString(s)
				if na != nb {
					t.Fatalf("item %d: Add = %v, AddString = %v", i, na, nb)
				}
			}
			if !slices.Equal(a.words(), b.words()) || a.Inserted() != b.Inserted() {
				t.Fatal("Add and AddString of the same bytes set different bits")
			}
			for _, it := range append(items, genItems("other", 2000)...) {
				if a.Test(it) != a.TestString(string(it)) {
					t.Fatalf("Test and TestString disagree on %q", it)
				}
			}
			// The unkeyed hash of a string is HashString; the keyed one KeyedHash.
			for _, it := range items[:50] {
				want := HashString(string(it))
				if v.keyed {
					want = KeyedHash(ftKey, it)
				} else if HashBytes(it) != want {
					t.Fatal("HashBytes and HashString differ")
				}
				if a.Hash(it) != want {
					t.Fatalf("Filter.Hash(%q) = %v, want %v", it, a.Hash(it), want)
				}
			}
		})
	}
}

func TestAddManyTestMany(t *testing.T) {
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			for _, size := range []int{0, 1, 31, 32, 33, 1000} {
				f := newFilterT(t, 2000, 0.01, v.opts()...)
				ref := newFilterT(t, 2000, 0.01, v.opts()...)
				items := genItems(fmt.Sprintf("many%d", size), size)
				// Some items already present, and some repeated in the batch.
				for i := 0; i < size; i += 3 {
					f.Add(items[i])
					ref.Add(items[i])
				}
				batch := slices.Clone(items)
				for i := 0; i < size; i += 7 {
					batch = append(batch, items[i])
				}
				rand.New(rand.NewPCG(uint64(size), 1)).Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
				want := 0
				for _, it := range batch {
					if ref.Add(it) {
						want++
					}
				}
				if got := f.AddMany(batch); got != want {
					t.Errorf("size %d: AddMany = %d new, Add one by one = %d", size, got, want)
				}
				if !slices.Equal(f.words(), ref.words()) || f.Inserted() != ref.Inserted() {
					t.Errorf("size %d: AddMany and Add set different bits or counts (Inserted %d vs %d)", size, f.Inserted(), ref.Inserted())
				}

				probe := append(slices.Clone(items), genItems(fmt.Sprintf("absent%d", size), size)...)
				// A dst with enough capacity is reused, with other contents.
				dst := make([]bool, 3, len(probe)+5)
				for i := range dst {
					dst[i] = true
				}
				res := f.TestMany(probe, dst)
				if len(res) != len(probe) {
					t.Fatalf("size %d: TestMany returned %d results for %d items", size, len(res), len(probe))
				}
				if len(probe) > 0 && &res[0] != &dst[:1][0] {
					t.Errorf("size %d: TestMany did not reuse a dst of capacity %d", size, cap(dst))
				}
				for i, it := range probe {
					if res[i] != f.Test(it) {
						t.Fatalf("size %d: TestMany[%d] = %v, Test = %v", size, i, res[i], !res[i])
					}
					if i < size && !res[i] {
						t.Fatalf("size %d: false negative for item %d", size, i)
					}
				}
				// A nil or short dst gets a new slice of the right length.
				if res := f.TestMany(probe, nil); len(res) != len(probe) {
					t.Errorf("size %d: TestMany(nil dst) returned %d results", size, len(res))
				}
				short := make([]bool, 0, len(probe)/2)
				if res := f.TestMany(probe, short); len(res) != len(probe) || !slices.Equal(res, f.TestMany(probe, nil)) {
					t.Errorf("size %d: TestMany with a short dst returned %d results", size, len(res))
				}
			}
		})
	}
}

func randHashes(r *rand.Rand, n int) []Hash {
	hs := make([]Hash, n)
	for i := range hs {
		hs[i] = Hash{r.Uint64(), r.Uint64()}
	}
	return hs
}

func TestAddHashesTestHashes(t *testing.T) {
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 7))
			for _, size := range []int{1, 31, 32, 33, 1000} {
				f := newFilterT(t, 2000, 0.01, v.opts()...)
				ref := newFilterT(t, 2000, 0.01, v.opts()...)
				hs := randHashes(r, size)
				hs = append(hs, hs[:size/5]...) // duplicates
				want := 0
				for _, h := range hs {
					if ref.AddHash(h) {
						want++
					}
				}
				if got := f.AddHashes(hs); got != want {
					t.Errorf("size %d: AddHashes = %d new, AddHash one by one = %d", size, got, want)
				}
				if !slices.Equal(f.words(), ref.words()) || f.Inserted() != ref.Inserted() {
					t.Errorf("size %d: AddHashes and AddHash set different bits or counts", size)
				}
				probe := append(hs, randHashes(r, size)...)
				dst := make([]bool, len(probe))
				f.TestHashes(probe, dst)
				for i, h := range probe {
					if dst[i] != f.TestHash(h) {
						t.Fatalf("size %d: TestHashes[%d] = %v, TestHash = %v", size, i, dst[i], !dst[i])
					}
					if i < len(hs) && !dst[i] {
						t.Fatalf("size %d: false negative for hash %d", size, i)
					}
				}
			}
			f := newFilterT(t, 100, 0.01, v.opts()...)
			if got := f.AddHashes(nil); got != 0 {
				t.Errorf("AddHashes(nil) = %d", got)
			}
		})
	}
}

// TestTestHashesEmpty: an empty batch is valid (dst has len(hs) = 0
// elements) and must not panic.
func TestTestHashesEmpty(t *testing.T) {
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			f := newFilterT(t, 100, 0.01, v.opts()...)
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("TestHashes(nil, nil) panicked: %v", r)
				}
			}()
			f.TestHashes(nil, nil)
			f.TestHashes([]Hash{}, make([]bool, 0, 4))
		})
	}
}

// TestAddDoesNotWriteItem gives every method an item slice whose spare
// capacity is filled with sentinel bytes, the trap of go-zero's
// append(data, byte(i)) (docs/DESIGN.md §4).
func TestAddDoesNotWriteItem(t *testing.T) {
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			f := newFilterT(t, 1000, 0.01, v.opts()...)
			for _, n := range []int{0, 1, 7, 8, 16, 17, 64, 100} {
				backing := make([]byte, n+64)
				for i := range backing {
					backing[i] = 0xA5
				}
				for i := range n {
					backing[i] = byte(i * 37)
				}
				orig := slices.Clone(backing)
				item := backing[:n:len(backing)]
				f.Add(item)
				f.Test(item)
				f.Hash(item)
				f.AddMany([][]byte{item, item})
				f.TestMany([][]byte{item}, nil)
				if !bytes.Equal(backing, orig) {
					t.Fatalf("len %d: an item's bytes or spare capacity were modified", n)
				}
				if len(item) != n || cap(item) != len(backing) {
					t.Fatalf("len %d: item slice header changed", n)
				}
			}
		})
	}
}

// fill adds keys [from, to) of the u64Item sequence, returning how many were new.
func fillU64(f *Filter, from, to uint64) uint64 {
	var buf [8]byte
	var news uint64
	for i := from; i < to; i++ {
		if f.Add(u64Item(buf[:], i)) {
			news++
		}
	}
	return news
}

func TestCountAndInserted(t *testing.T) {
	const n = 100_000
	for _, layout := range []Layout{Blocked, Classic} {
		for _, p := range []float64{0.01, 1e-4} {
			t.Run(fmt.Sprintf("%s/p=%g", layout, p), func(t *testing.T) {
				f := newFilterT(t, n, p, WithLayout(layout))
				var added, news uint64
				for _, target := range []uint64{n / 2, n, 2 * n} {
					news += fillU64(f, added, target)
					added = target
					if f.Inserted() != news {
						t.Errorf("at %d items: Inserted() = %d, Add reported %d new", added, f.Inserted(), news)
					}
					// A not-new report is a false positive at insertion time:
					// at most about added * FPR(added).
					if lost := added - news; float64(lost) > float64(added)*f.Sizing().FPRAt(added)+5*math.Sqrt(float64(added)*f.Sizing().FPRAt(added))+5 {
						t.Errorf("at %d items: %d adds reported not new, more than the rate allows", added, lost)
					}
					c := f.Count()
					if rel := math.Abs(float64(c)/float64(added) - 1); rel > 0.03 {
						t.Errorf("at %d items (%.1f x capacity): Count() = %d, off by %.1f%%", added, float64(added)/n, c, 100*rel)
					}
				}
			})
		}
	}
}

func TestFillRatioAndEstimatedFPR(t *testing.T) {
	const n = 100_000
	for _, layout := range []Layout{Blocked, Classic} {
		t.Run(layout.String(), func(t *testing.T) {
			f := newFilterT(t, n, 0.01, WithLayout(layout))
			if f.FillRatio() != 0 || f.EstimatedFPR() != 0 || f.Count() != 0 {
				t.Fatalf("empty filter: fill %g, FPR %g, count %d", f.FillRatio(), f.EstimatedFPR(), f.Count())
			}
			fillU64(f, 0, n)
			m, k := float64(f.Bits()), float64(f.K())
			var want float64
			if layout == Classic {
				want = 1 - math.Exp(-k*n/m)
			} else {
				// Items per block ~ Poisson(lambda); a bit stays unset with
				// probability E[(1-1/512)^(k*X)].
				lambda := n * BlockBits / m
				want = 1 - math.Exp(-lambda*(1-math.Pow(1-1.0/BlockBits, k)))
			}
			if got := f.FillRatio(); math.Abs(got/want-1) > 0.01 {
				t.Errorf("FillRatio() = %.5f, want %.5f", got, want)
			}
			est, model := f.EstimatedFPR(), f.Sizing().FPRAt(n)
			if math.Abs(est/model-1) > 0.1 {
				t.Errorf("EstimatedFPR() = %.5g at capacity, model %.5g", est, model)
			}
			if est > f.TargetFPR() {
				t.Errorf("EstimatedFPR() = %.5g at capacity, above the target %g", est, f.TargetFPR())
			}
		})
	}
}

func TestUnionIntersect(t *testing.T) {
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			const n = 5000
			a := newFilterT(t, 2*n, 1e-4, v.opts()...)
			b := newFilterT(t, 2*n, 1e-4, v.opts()...)
			onlyA, onlyB, both := genItems("a", n), genItems("b", n), genItems("ab", n)
			for _, it := range append(onlyA, both...) {
				a.Add(it)
			}
			for _, it := range append(onlyB, both...) {
				b.Add(it)
			}
			bWords := slices.Clone(b.words())

			u := newFilterT(t, 2*n, 1e-4, v.opts()...)
			if err := u.Union(a); err != nil {
				t.Fatal(err)
			}
			if err := u.Union(b); err != nil {
				t.Fatal(err)
			}
			for _, set := range [][][]byte{onlyA, onlyB, both} {
				for _, it := range set {
					if !u.Test(it) {
						t.Fatalf("union lacks %q", it)
					}
				}
			}
			if u.Inserted() != u.Count() {
				t.Errorf("after Union: Inserted() = %d, Count() = %d", u.Inserted(), u.Count())
			}
			if c := u.Count(); math.Abs(float64(c)/(3*n)-1) > 0.03 {
				t.Errorf("union Count() = %d, want about %d", c, 3*n)
			}
			if !slices.Equal(b.words(), bWords) {
				t.Error("Union modified its argument")
			}

			fprA := a.EstimatedFPR()
			if err := a.Intersect(b); err != nil {
				t.Fatal(err)
			}
			for _, it := range both {
				if !a.Test(it) {
					t.Fatalf("intersection lacks %q, added to both", it)
				}
			}
			fp := 0
			for _, it := range append(onlyA, onlyB...) {
				if a.Test(it) {
					fp++
				}
			}
			// The intersection's rate is at most a's (~1e-4 at n items here).
			if fp > 10 {
				t.Errorf("intersection answers true for %d of %d items added to one side only", fp, 2*n)
			}
			if a.Inserted() != a.Count() {
				t.Errorf("after Intersect: Inserted() = %d, Count() = %d", a.Inserted(), a.Count())
			}
			// The AND keeps every bit of the common items, and some bits
			// set on both sides by different items: Count over-estimates
			// the intersection, but never by much less than it.
			if c := a.Count(); c < n*97/100 {
				t.Errorf("intersection Count() = %d, want at least about %d", c, n)
			}
			if after := a.EstimatedFPR(); after > fprA {
				t.Errorf("intersection EstimatedFPR() = %g, more than the filter's before (%g)", after, fprA)
			}
		})
	}
}

func TestIncompatible(t *testing.T) {
	blk := func(bits uint64, k uint32, opts ...Option) *Filter {
		return newSizedT(t, Sizing{Layout: Blocked, N: 100, P: 0.1, Bits: bits, K: k}, opts...)
	}
	otherKey := ftKey
	otherKey[15] ^= 1
	cases := []struct {
		name  string
		f, g  *Filter
		names []string // in the order f's value, g's value
	}{
		{"layout", blk(1024, 6), newSizedT(t, Sizing{Layout: Classic, N: 100, P: 0.01, Bits: 1024, K: 6}), []string{"blocked", "classic"}},
		{"layout reversed", newSizedT(t, Sizing{Layout: Classic, N: 100, P: 0.01, Bits: 1024, K: 6}), blk(1024, 6), []string{"classic", "blocked"}},
		{"m", blk(5120, 6), blk(10240, 6), []string{"5120", "10240"}},
		{"m reversed", blk(10240, 6), blk(5120, 6), []string{"10240", "5120"}},
		{"k", blk(1024, 6), blk(1024, 7), []string{"6", "7"}},
		{"k reversed", blk(1024, 17), blk(1024, 3), []string{"17", "3"}},
		{"keyed", blk(1024, 6), blk(1024, 6, WithKey(ftKey)), []string{"xxh3-128", "siphash-2-4-128"}},
		{"keyed reversed", blk(1024, 6, WithKey(ftKey)), blk(1024, 6), []string{"siphash-2-4-128", "xxh3-128"}},
		{"keys", blk(1024, 6, WithKey(ftKey)), blk(1024, 6, WithKey(otherKey)), []string{"key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.f.Add([]byte("x"))
			c.g.Add([]byte("y"))
			before := slices.Clone(c.f.words())
			for op, fn := range map[string]func(*Filter) error{"Union": c.f.Union, "Intersect": c.f.Intersect, "Compatible": c.f.Compatible} {
				err := fn(c.g)
				if !errors.Is(err, ErrIncompatible) {
					t.Fatalf("%s: error = %v, want ErrIncompatible", op, err)
				}
				msg := err.Error()
				at := 0
				for _, name := range c.names {
					i := strings.Index(msg[at:], name)
					if i < 0 {
						t.Errorf("%s: message %q does not name %q (in order %q)", op, msg, name, c.names)
						break
					}
					at += i + len(name)
				}
			}
			if !slices.Equal(c.f.words(), before) || c.f.Inserted() != 1 {
				t.Error("a refused Union or Intersect modified the filter")
			}
		})
	}
	// Same geometry, same key: compatible, whatever n, p and concurrency.
	f := blk(1024, 6, WithKey(ftKey))
	g := newSizedT(t, Sizing{Layout: Blocked, N: 7, P: 0.3, Bits: 1024, K: 6}, WithKey(ftKey), WithConcurrent())
	if err := f.Union(g); err != nil {
		t.Errorf("compatible filters: %v", err)
	}
}

func TestClear(t *testing.T) {
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			f := newFilterT(t, 1000, 1e-4, v.opts()...)
			items := genItems("clear", 1000)
			f.AddMany(items)
			f.Clear()
			if f.Inserted() != 0 || f.Count() != 0 || f.FillRatio() != 0 || f.EstimatedFPR() != 0 {
				t.Errorf("after Clear: Inserted %d, Count %d, FillRatio %g, EstimatedFPR %g", f.Inserted(), f.Count(), f.FillRatio(), f.EstimatedFPR())
			}
			for _, w := range f.words() {
				if w != 0 {
					t.Fatal("after Clear: bits still set")
				}
			}
			for _, it := range items {
				if f.Test(it) {
					t.Fatalf("after Clear: %q still present", it)
				}
			}
			if !f.Add(items[0]) || f.Inserted() != 1 || !f.Test(items[0]) {
				t.Error("a cleared filter does not work")
			}
			if f.Cap() != 1000 || f.TargetFPR() != 1e-4 {
				t.Error("Clear changed the sizing")
			}
		})
	}
}

// redisBitSet reads logical offset o in Redis SETBIT numbering from the
// filter's bytes: bit 7-(o%8) of byte o/8.
func redisBitSet(f *Filter, o uint64) bool {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f.words()))), len(f.words())*8)
	return b[o>>3]&(0x80>>(o&7)) != 0
}

func TestOffsets(t *testing.T) {
	if !littleEndian {
		t.Skip("reads the bit array as bytes")
	}
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			// Every k of the blocked layout's straight-line path (1-14),
			// and the loop beyond it.
			for _, k := range []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 64} {
				f := newSizedT(t, Sizing{Layout: v.layout, N: 1000, P: 0.1, Bits: 512 * 64, K: k}, v.opts()...)
				for i, it := range genItems("off", 50) {
					h := f.Hash(it)
					prefix := []uint64{12345, 67890}
					offs := f.Offsets(h, slices.Clone(prefix))
					if !slices.Equal(offs[:2], prefix) {
						t.Fatal("Offsets overwrote dst")
					}
					offs = offs[2:]
					if len(offs) != int(k) {
						t.Fatalf("k=%d: %d offsets", k, len(offs))
					}
					for _, o := range offs {
						if o >= f.Bits() {
							t.Fatalf("offset %d >= m = %d", o, f.Bits())
						}
						if v.layout == Blocked && o/BlockBits != offs[0]/BlockBits {
							t.Fatalf("k=%d: offsets %v span more than one block", k, offs)
						}
					}
					if i == 0 {
						// On an empty filter, Add sets exactly these bits.
						f.AddHash(h)
						set := 0
						for o := range f.Bits() {
							if redisBitSet(f, o) {
								set++
								if !slices.Contains(offs, o) {
									t.Fatalf("k=%d: Add set bit %d, not among its offsets %v", k, o, offs)
								}
							}
						}
						for _, o := range offs {
							if !redisBitSet(f, o) {
								t.Fatalf("k=%d: offset %d not set by Add", k, o)
							}
						}
						if d := len(slices.Compact(slices.Sorted(slices.Values(offs)))); set != d {
							t.Fatalf("k=%d: %d bits set, %d distinct offsets", k, set, d)
						}
					}
				}
			}
		})
	}
}

func TestKeyChangesOffsets(t *testing.T) {
	for _, layout := range []Layout{Blocked, Classic} {
		k2 := ftKey
		k2[0] ^= 0x80
		a := newFilterT(t, 1e6, 0.01, WithLayout(layout), WithKey(ftKey))
		b := newFilterT(t, 1e6, 0.01, WithLayout(layout), WithKey(k2))
		u := newFilterT(t, 1e6, 0.01, WithLayout(layout))
		same := 0
		for _, it := range genItems("key", 200) {
			oa, ob, ou := a.Offsets(a.Hash(it), nil), b.Offsets(b.Hash(it), nil), u.Offsets(u.Hash(it), nil)
			if slices.Equal(oa, ob) || slices.Equal(oa, ou) {
				same++
			}
		}
		if same != 0 {
			t.Errorf("%s: %d of 200 items have the same offsets under two keys (or keyed and unkeyed)", layout, same)
		}
	}
}

func TestHash64Distinct(t *testing.T) {
	const n = 200_000
	h1 := make(map[uint64]uint64, n)
	h2 := make(map[uint64]uint64, n)
	inputs := make([]uint64, 0, 2*n)
	for i := range uint64(n) {
		inputs = append(inputs, i, i*golden) // dense and spread inputs
	}
	for _, x := range inputs {
		h := Hash64(x)
		if h != Hash64(x) {
			t.Fatal("Hash64 is not deterministic")
		}
		if y, dup := h1[h.H1]; dup && y != x {
			t.Fatalf("Hash64(%d).H1 == Hash64(%d).H1", x, y)
		}
		if y, dup := h2[h.H2]; dup && y != x {
			t.Fatalf("Hash64(%d).H2 == Hash64(%d).H2", x, y)
		}
		h1[h.H1], h2[h.H2] = x, x
		if h.H1 == h.H2 {
			t.Fatalf("Hash64(%d) has equal halves", x)
		}
	}
	// Hash64 feeds AddHash/TestHash.
	f := newFilterT(t, 1000, 1e-6)
	for i := range uint64(1000) {
		f.AddHash(Hash64(i))
	}
	for i := range uint64(1000) {
		if !f.TestHash(Hash64(i)) {
			t.Fatalf("Hash64(%d) absent after AddHash", i)
		}
	}
}

func TestAccessors(t *testing.T) {
	for _, v := range optVariants() {
		t.Run(v.name, func(t *testing.T) {
			const n, p = 12345, 0.002
			f := newFilterT(t, n, p, v.opts()...)
			s, err := Size(n, p, v.layout)
			if err != nil {
				t.Fatal(err)
			}
			wantHash := HashXXH3
			if v.keyed {
				wantHash = HashSipHash
			}
			switch {
			case f.Cap() != n:
				t.Errorf("Cap() = %d", f.Cap())
			case f.TargetFPR() != p:
				t.Errorf("TargetFPR() = %g", f.TargetFPR())
			case f.Bits() != s.Bits:
				t.Errorf("Bits() = %d, Size says %d", f.Bits(), s.Bits)
			case f.K() != s.K:
				t.Errorf("K() = %d, Size says %d", f.K(), s.K)
			case f.Bytes() != s.Bits/8 || uint64(len(f.words())*8) != f.Bytes():
				t.Errorf("Bytes() = %d for %d bits and %d words", f.Bytes(), s.Bits, len(f.words()))
			case f.Layout() != v.layout:
				t.Errorf("Layout() = %s", f.Layout())
			case f.HashID() != wantHash:
				t.Errorf("HashID() = %s", f.HashID())
			case f.Keyed() != v.keyed:
				t.Errorf("Keyed() = %v", f.Keyed())
			case f.Concurrent() != v.concurrent:
				t.Errorf("Concurrent() = %v", f.Concurrent())
			case f.Sizing() != s:
				t.Errorf("Sizing() = %v, Size says %v", f.Sizing(), s)
			case f.Inserted() != 0:
				t.Errorf("Inserted() = %d on a new filter", f.Inserted())
			}
		})
	}
	if HashXXH3.String() != "xxh3-128" || HashSipHash.String() != "siphash-2-4-128" || HashID(9).String() != "hash(9)" {
		t.Error("HashID.String")
	}
}

// TestAligned checks that a blocked bit array starts on a 64-byte
// boundary, so that each 512-bit block is one cache line, and that every
// bit array has its exact size; a classic one is not padded for
// alignment (which would take a 152-byte array from 160 bytes to 208).
func TestAligned(t *testing.T) {
	var keep []*Filter // keep them alive so allocations land at new addresses
	for round := range 3 {
		for _, s := range []Sizing{
			{Layout: Classic, N: 1, P: 0.5, Bits: 64, K: 1},
			{Layout: Classic, N: 1, P: 0.5, Bits: 64 * 3, K: 1},
			{Layout: Blocked, N: 1, P: 0.5, Bits: 512, K: 1},
			{Layout: Blocked, N: 1, P: 0.5, Bits: 512 * 3, K: 1},
			{Layout: Blocked, N: 1, P: 0.5, Bits: 512 * 1000, K: 1},
			{Layout: Classic, N: 1, P: 0.5, Bits: 64 * 12345, K: 1},
		} {
			for _, opts := range [][]Option{nil, {WithConcurrent()}} {
				f := newSizedT(t, s, opts...)
				if addr := uintptr(unsafe.Pointer(&f.words()[0])); addr%64 != 0 && s.Layout == Blocked {
					t.Errorf("round %d, %d bits: bit array at %#x is not 64-byte aligned", round, s.Bits, addr)
				}
				if uint64(len(f.words())) != s.Bits/64 || uint64(cap(f.words())) != s.Bits/64 {
					t.Errorf("%d bits: len %d cap %d words", s.Bits, len(f.words()), cap(f.words()))
				}
				keep = append(keep, f)
			}
			_ = make([]byte, 8+round*8) // shift the allocator a little
		}
	}
	for _, n := range []uint64{1, 100, 10_000, 1_000_000} {
		f := newFilterT(t, n, 0.01, WithLayout(Blocked))
		if addr := uintptr(unsafe.Pointer(&f.words()[0])); addr%64 != 0 {
			t.Errorf("New(%d): bit array at %#x is not 64-byte aligned", n, addr)
		}
	}
	_ = keep
}

// TestNoRaceClassicArrayUnpadded checks that a small classic bit array
// takes its own size class only: 19 words (152 bytes) allocate 160 bytes,
// not the 208 that padding for alignment took. (The allocation count
// runs without the race detector, which adds its own. TotalAlloc counts
// the runtime's own allocations too, such as the few KB of a new OS
// thread that a collection may start: a first collection starts those,
// and 10,000 filters dilute any left to under a byte each.)
func TestNoRaceClassicArrayUnpadded(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation sizes run in make test's race-free pass")
	}
	s := Sizing{Layout: Classic, N: 100, P: 0.005, Bits: 19 * 64, K: 8}
	var before, after runtime.MemStats
	const count = 10_000
	keep := make([]*Filter, count)
	runtime.GC()
	runtime.ReadMemStats(&before)
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = newSizedT(t, s)
	}
	runtime.ReadMemStats(&after)
	perFilter := (after.TotalAlloc - before.TotalAlloc) / count
	// The Filter (64 bytes) and the array (160).
	if perFilter > 64+160 {
		t.Errorf("%d bytes allocated per filter of 152 bytes of bits, want at most %d", perFilter, 64+160)
	}
	runtime.KeepAlive(keep)
}
