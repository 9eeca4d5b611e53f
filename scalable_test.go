package bloom

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestScalableRedisBloomCounters checks the RedisBloom-mode counters
// against figures worked out by hand from docs/DESIGN.md §5 and §7: capacity 100,
// expansion 2 → sub-filters of 100, 200, 400, …; a new sub-filter opens
// when a new item arrives and the last one holds its capacity.
func TestScalableRedisBloomCounters(t *testing.T) {
	// At p = 1e-6 a false positive among these 701 items is improbable
	// (about 1e-3), and the keys are fixed, so every count is exact.
	s, err := NewScalable(100, 1e-6, WithRedisBloomSplit())
	if err != nil {
		t.Fatal(err)
	}
	add := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := s.AddString(fmt.Sprintf("item-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []struct {
		to       int    // add distinct items up to this index
		filters  int    // sub-filters afterwards
		capacity uint64 // total capacity afterwards
	}{
		{100, 1, 100},  // exactly full: no growth yet
		{101, 2, 300},  // the 101st new item opens 200
		{300, 2, 300},  // 100 + 200 filled
		{301, 3, 700},  // opens 400
		{700, 3, 700},  //
		{701, 4, 1500}, // opens 800
	}
	from := 0
	for _, st := range steps {
		add(from, st.to)
		from = st.to
		info := s.Info()
		if info.Items != uint64(st.to) {
			t.Errorf("after %d adds: items %d", st.to, info.Items)
		}
		if info.Filters != st.filters {
			t.Errorf("after %d adds: %d filters, want %d", st.to, info.Filters, st.filters)
		}
		if info.Capacity != st.capacity {
			t.Errorf("after %d adds: capacity %d, want %d", st.to, info.Capacity, st.capacity)
		}
		if info.Expansion != 2 {
			t.Errorf("expansion %d", info.Expansion)
		}
	}
	// Re-adding present items changes nothing.
	before := s.Info()
	for i := range 50 {
		if isNew, err := s.AddString(fmt.Sprintf("item-%d", i)); isNew || err != nil {
			t.Fatalf("re-add item-%d: new=%v err=%v", i, isNew, err)
		}
	}
	if s.Info() != before {
		t.Errorf("re-adding changed info: %+v → %+v", before, s.Info())
	}
}

func TestScalableNonScalingFull(t *testing.T) {
	s, err := NewScalable(50, 0.001, WithNonScaling())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := s.AddString(fmt.Sprintf("k%d", i)); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	if _, err := s.AddString("one-too-many"); !errors.Is(err, ErrFull) {
		t.Fatalf("add past capacity: err = %v, want ErrFull", err)
	}
	if isNew, err := s.AddString("k7"); isNew || err != nil {
		t.Fatalf("re-add of a present item when full: new=%v err=%v, want false, nil", isNew, err)
	}
	if info := s.Info(); info.Filters != 1 || !info.NonScaling || info.Expansion != 0 {
		t.Errorf("info %+v", info)
	}
}

func TestScalableConcurrentNoFalseNegatives(t *testing.T) {
	for _, layout := range []Layout{Blocked, RedisBloom} {
		t.Run(layout.String(), func(t *testing.T) { checkScalableConcurrent(t, layout) })
	}
}

func checkScalableConcurrent(t *testing.T, layout Layout) {
	s, err := NewScalable(1000, 0.01, WithConcurrent(), WithLayout(layout))
	if err != nil {
		t.Fatal(err)
	}
	const writers, per = 4, 5000
	var wg sync.WaitGroup
	scalableWriters(t, &wg, s, writers, per, func(w, i int) bool {
		if !s.TestString(fmt.Sprintf("w%d-%d", w, i)) {
			t.Errorf("false negative right after add: w%d-%d", w, i)
			return false
		}
		return true
	})
	wg.Go(func() { // a reader during growth
		for range 20000 {
			s.TestString("w0-0")
		}
	})
	wg.Wait()
	for w := range writers {
		for i := range per {
			if !s.TestString(fmt.Sprintf("w%d-%d", w, i)) {
				t.Fatalf("false negative: w%d-%d", w, i)
			}
		}
	}
	if c := s.Count(); c > writers*per || c < writers*per*98/100 {
		t.Errorf("count %d for %d distinct items", c, writers*per)
	}
	if s.NumFilters() < 4 {
		t.Errorf("only %d sub-filters after growing 20x", s.NumFilters())
	}
}

// TestScalableMemoryAtCapacity fills scalable filters to exactly their
// initial capacity: still one sub-filter, and at most 1.1× the memory of a
// Filter of the same n and p, at every rate from 0.1 to 1e-7.
func TestScalableMemoryAtCapacity(t *testing.T) {
	const n = 20_000
	for _, layout := range []Layout{Blocked, Classic} {
		for _, p := range []float64{0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7} {
			s, err := NewScalable(n, p, WithLayout(layout))
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if _, err := s.AddString(fmt.Sprintf("user%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			f, err := New(n, p, WithLayout(layout))
			if err != nil {
				t.Fatal(err)
			}
			ratio := float64(s.Bytes()) / float64(f.Bytes())
			if s.NumFilters() != 1 || ratio > 1.1 {
				t.Errorf("%s p=%g: %d sub-filters at capacity, %.3f× a Filter", layout, p, s.NumFilters(), ratio)
			}
		}
	}
}

// TestScalableErrorSplit checks the sub-filters' rates: they sum to at most
// p, follow the documented split, and RedisBloom mode halves from p/2.
func TestScalableErrorSplit(t *testing.T) {
	const p = 0.01
	cases := []struct {
		name string
		so   Growth
		want func(i int) float64
	}{
		{"default", Growth{}, func(i int) float64 {
			if i == 0 {
				return 0.9 * p
			}
			return 0.1 * p * 0.5 * math.Pow(0.5, float64(i-1))
		}},
		{"redisbloom", Growth{RedisBloom: true}, func(i int) float64 { return p * math.Pow(0.5, float64(i+1)) }},
		{"textbook r=0.8", Growth{Tightening: 0.8, FirstShare: 0.2}, func(i int) float64 { return p * 0.2 * math.Pow(0.8, float64(i)) }},
	}
	for _, c := range cases {
		s, err := NewScalable(10, p, WithGrowth(c.so))
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for i := range MaxSubFilters {
			_, got := s.rule().sub(i)
			if want := c.want(i); math.Abs(got-want) > 1e-12*want {
				t.Errorf("%s: sub-filter %d rate %g, want %g", c.name, i, got, want)
			}
			sum += got
		}
		if sum > p*(1+1e-12) {
			t.Errorf("%s: rates sum to %g > %g", c.name, sum, p)
		}
	}
	for _, so := range []Growth{{Tightening: 1}, {FirstShare: 1.5}, {Tightening: -0.1}, {RedisBloom: true, FirstShare: 0.9}} {
		if _, err := NewScalable(10, p, WithGrowth(so)); err == nil {
			t.Errorf("NewScalable(%+v) accepted", so)
		}
	}
}

// TestScalableGrowthLimit: growth stops with ErrTooLarge at WithMaxBytes,
// and the filter keeps answering for what it holds.
func TestScalableGrowthLimit(t *testing.T) {
	s, err := NewScalable(1000, 0.01, WithMaxBytes(8<<10))
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for i := range 100_000 {
		key := fmt.Sprintf("k%d", i)
		_, err := s.AddString(key)
		if errors.Is(err, ErrTooLarge) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, key)
	}
	if len(added) == 100_000 {
		t.Fatal("grew past an 8 KiB limit")
	}
	if s.Bytes() > 8<<10 {
		t.Errorf("%d bytes over the limit", s.Bytes())
	}
	for _, k := range added {
		if !s.TestString(k) {
			t.Fatalf("false negative %q", k)
		}
	}
}

// TestScalableConcurrentAdds: without WithConcurrent, adds (and growth)
// from many goroutines are still safe; tests run after them.
func TestScalableConcurrentAdds(t *testing.T) {
	for _, layout := range []Layout{Blocked, Classic} {
		s, err := NewScalable(500, 0.001, WithLayout(layout))
		if err != nil {
			t.Fatal(err)
		}
		const writers, per = 4, 4000
		var wg sync.WaitGroup
		var reported [writers]int
		for w := range writers {
			wg.Go(func() {
				for i := range per {
					// Every writer adds the shared items too: each is new once.
					isNew, err := s.AddString(fmt.Sprintf("shared-%d", i%1000))
					if err != nil {
						t.Error(err)
						return
					}
					if isNew {
						reported[w]++
					}
					if _, err := s.AddString(fmt.Sprintf("w%d-%d", w, i)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		shared := 0
		for _, r := range reported {
			shared += r
		}
		if shared > 1000 || shared < 990 {
			t.Errorf("%s: shared items reported new %d times, want ≤ 1000 (one each, minus false positives)", layout, shared)
		}
		distinct := uint64(1000 + writers*per)
		if c := s.Count(); c > distinct || c < distinct*99/100 {
			t.Errorf("%s: count %d for %d distinct items", layout, c, distinct)
		}
		for w := range writers {
			for i := range per {
				if !s.TestString(fmt.Sprintf("w%d-%d", w, i)) {
					t.Fatalf("%s: false negative w%d-%d", layout, w, i)
				}
			}
		}
		if s.NumFilters() < 4 {
			t.Errorf("%s: %d sub-filters after growing 34×", layout, s.NumFilters())
		}
	}
}

// TestScalableFootprint pins the size of a Scalable (which holds its first
// sub-filter and shares its growth parameters): a server keeps one per
// key, so every word counts. 96 bytes is a Go size class; a field more
// rounds up to 112 (a Filter is 64).
func TestScalableFootprint(t *testing.T) {
	if got := unsafe.Sizeof(Scalable{}); got > 96 {
		t.Errorf("Scalable is %d bytes, want at most 96", got)
	}
	if got := unsafe.Sizeof(Filter{}); got > 64 {
		t.Errorf("Filter is %d bytes, want at most 64", got)
	}
	s, err := NewScalable(100, 0.01, WithRedisBloomSplit())
	if err != nil {
		t.Fatal(err)
	}
	if fs := s.filters(); len(fs) != 1 || fs[0] != &s.first {
		t.Errorf("a new filter's chain is %v, want its embedded first sub-filter", fs)
	}
	same, err := NewScalable(5000, 0.01, WithRedisBloomSplit())
	if err != nil {
		t.Fatal(err)
	}
	if same.prm != s.prm {
		t.Error("two filters with the same growth parameters do not share them")
	}
	other, _ := NewScalable(100, 0.02, WithRedisBloomSplit())
	if other.prm == s.prm || other.prm.p != 0.02 {
		t.Error("filters with different rates share their parameters")
	}
}

// Filters with ever new parameters do not grow the shared table past its
// bound; each then keeps its own copy, which is right all the same.
func TestScalableSharedParamsBounded(t *testing.T) {
	for i := range maxSharedParams + 500 {
		p := 0.001 + float64(i)*1e-7
		s, err := NewScalable(10, p)
		if err != nil {
			t.Fatal(err)
		}
		if s.TargetFPR() != p {
			t.Fatalf("rate %v, want %v", s.TargetFPR(), p)
		}
	}
	if n := sharedParams.n.Load(); n > maxSharedParams {
		t.Fatalf("%d shared parameter sets, bound %d", n, maxSharedParams)
	}
}

// TestScalableTestMany: TestMany answers as Test item by item, on every
// layout, before and after growth (items in old sub-filters and the
// newest), for batches of every length around the batch size; never a
// false negative; and a zero Scalable finds nothing.
func TestScalableTestMany(t *testing.T) {
	for _, layout := range []Layout{Blocked, Classic, RedisBloom} {
		t.Run(layout.String(), func(t *testing.T) {
			s, err := NewScalable(200, 0.01, WithLayout(layout))
			if err != nil {
				t.Fatal(err)
			}
			var items [][]byte
			for i := range 3000 {
				items = append(items, fmt.Appendf(nil, "q%d", i))
			}
			for grown := range 2 {
				if grown == 1 {
					for _, it := range items[:1500] {
						if _, err := s.Add(it); err != nil {
							t.Fatal(err)
						}
					}
					if s.NumFilters() < 3 {
						t.Fatalf("%d sub-filters after 1500 items at capacity 200", s.NumFilters())
					}
				}
				for _, n := range []int{0, 1, 31, 32, 33, 64, 100, 3000} {
					for _, from := range []int{0, min(1400, 3000-n), 3000 - n} {
						got := s.TestMany(items[from:from+n], nil)
						for i, it := range items[from : from+n] {
							if want := s.Test(it); got[i] != want {
								t.Fatalf("grown %d, n %d from %d: item %d TestMany %v, Test %v", grown, n, from, i, got[i], want)
							}
							if grown == 1 && from+i < 1500 && !got[i] {
								t.Fatalf("false negative: %s", it)
							}
						}
					}
				}
			}
		})
	}
	s, _ := NewScalable(100, 0.01)
	qs, dst := [][]byte{[]byte("a"), []byte("b")}, make([]bool, 2)
	if n := testing.AllocsPerRun(100, func() { dst = s.TestMany(qs, dst) }); n != 0 {
		t.Errorf("TestMany into a large enough dst: %v allocations", n)
	}
	var zero Scalable
	if got := zero.TestMany([][]byte{[]byte("a"), nil}, []bool{true, true}); got[0] || got[1] {
		t.Errorf("zero Scalable: %v", got)
	}
}

// TestScalableTestManyConcurrent: TestMany on a concurrent filter that
// grows under four writers finds every item whose Add returned before
// the call (no false negative across growth), in every layout.
func TestScalableTestManyConcurrent(t *testing.T) {
	for _, layout := range []Layout{Blocked, RedisBloom} {
		t.Run(layout.String(), func(t *testing.T) {
			s, err := NewScalable(500, 0.01, WithConcurrent(), WithLayout(layout))
			if err != nil {
				t.Fatal(err)
			}
			const writers, per = 4, 4000
			var done [writers]atomic.Int64 // items 0…done-1 of writer w are added
			var wg sync.WaitGroup
			scalableWriters(t, &wg, s, writers, per, func(w, i int) bool { done[w].Store(int64(i + 1)); return true })
			wg.Go(func() {
				var items [][]byte
				var dst []bool
				for round := 0; ; round++ {
					items = items[:0]
					finished := true
					for w := range writers {
						n := done[w].Load()
						finished = finished && n == per
						for i := max(0, n-100); i < n; i++ {
							items = append(items, fmt.Appendf(nil, "w%d-%d", w, i))
						}
					}
					dst = s.TestMany(items, dst)
					for i, ok := range dst {
						if !ok {
							t.Errorf("round %d: false negative for %s, added before the call", round, items[i])
							return
						}
					}
					if finished {
						return
					}
				}
			})
			wg.Wait()
			if s.NumFilters() < 4 {
				t.Errorf("%d sub-filters: the test did not reach growth", s.NumFilters())
			}
		})
	}
}

// scalableWriters starts writers goroutines in wg, writer w adding the
// items "w<w>-<i>" for i < per to s, calling added(w, i) after each
// (false: stop).
func scalableWriters(t *testing.T, wg *sync.WaitGroup, s *Scalable, writers, per int, added func(w, i int) bool) {
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				if _, err := s.AddString(fmt.Sprintf("w%d-%d", w, i)); err != nil {
					t.Error(err)
					return
				}
				if !added(w, i) {
					return
				}
			}
		})
	}
}

// TestScalableAddMany: AddMany answers, stops, counts and sets bits as
// Add one item after the other does, in every layout, scaling (through
// several growths) and non-scaling (past full), for batch lengths around
// the batch size, with repeated items.
func TestScalableAddMany(t *testing.T) {
	items := make([][]byte, 4000)
	for i := range items {
		items[i] = fmt.Appendf(nil, "m%d", i%3100) // the last 900 repeat
	}
	for _, layout := range []Layout{Blocked, Classic, RedisBloom} {
		for _, opts := range [][]Option{{WithLayout(layout)}, {WithLayout(layout), WithNonScaling()}} {
			name := fmt.Sprintf("%s/%d-options", layout, len(opts))
			t.Run(name, func(t *testing.T) {
				for _, chunk := range []int{1, 31, 32, 33, 500, 4000} {
					one, err := NewScalable(300, 0.01, opts...)
					if err != nil {
						t.Fatal(err)
					}
					many, _ := NewScalable(300, 0.01, opts...)
					want := make([]bool, len(items))
					wantErr := make([]error, len(items))
					for i, it := range items {
						want[i], wantErr[i] = one.Add(it)
					}
					got := make([]bool, len(items))
					refused := 0
					for off := 0; off < len(items); {
						end := min(off+chunk, len(items))
						n, err := many.AddMany(items[off:end], got[off:end])
						i := off + n
						if i < end { // stopped at item i: Add refused it too
							if err == nil || !errors.Is(err, wantErr[i]) {
								t.Fatalf("chunk %d: stopped at %d with %v, Add said %v", chunk, i, err, wantErr[i])
							}
							refused++
							off = i + 1
							continue
						}
						if err != nil {
							t.Fatalf("chunk %d: error %v with every item added", chunk, err)
						}
						off = end
					}
					for i := range items {
						if wantErr[i] == nil && got[i] != want[i] {
							t.Fatalf("chunk %d: item %d AddMany new %v, Add %v", chunk, i, got[i], want[i])
						}
						if wantErr[i] != nil && refused == 0 {
							t.Fatalf("chunk %d: Add refused item %d (%v), AddMany did not stop", chunk, i, wantErr[i])
						}
					}
					a, _ := one.MarshalBinary()
					b, _ := many.MarshalBinary()
					if !bytes.Equal(a, b) || one.Count() != many.Count() {
						t.Fatalf("chunk %d: AddMany's filter (%d items, %d sub-filters) differs from Add's (%d, %d)",
							chunk, many.Count(), many.NumFilters(), one.Count(), one.NumFilters())
					}
					if len(opts) == 1 && one.NumFilters() < 3 || len(opts) == 2 && refused == 0 {
						t.Fatalf("chunk %d: %d sub-filters, %d refused: the test did not reach growth or a full filter", chunk, one.NumFilters(), refused)
					}
				}
			})
		}
	}
}

// TestNoRaceScalableAddManyAllocs: AddMany allocates nothing (the race
// detector's instrumentation does).
func TestNoRaceScalableAddManyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates; the race-free pass runs this")
	}
	s, _ := NewScalable(100000, 0.01)
	items := make([][]byte, 64)
	for i := range items {
		items[i] = fmt.Appendf(nil, "a%d", i)
	}
	isNew := make([]bool, 64)
	if n := testing.AllocsPerRun(100, func() { s.AddMany(items, isNew) }); n != 0 {
		t.Errorf("AddMany: %v allocations", n)
	}
}
