package redisfilter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bloomery/bloom"
	"github.com/redis/go-redis/v9"
)

func mustCreateScalable(t *testing.T, c redis.UniversalClient, name string, n0 uint64, p float64, so bloom.Growth, opts ...Option) *Scalable {
	t.Helper()
	s, err := CreateScalable(context.Background(), c, name, n0, p, append([]Option{WithGrowth(so)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkRedisBloomCounters mirrors bloom's TestScalableRedisBloomCounters:
// capacity 100, expansion 2 → sub-filters of 100, 200, 400, …; a new one
// opens when a new item arrives and the last one holds its capacity. At
// p = 1e-6 a false positive among these 701 fixed items is improbable, so
// every count is exact.
func checkRedisBloomCounters(t *testing.T, c redis.UniversalClient, name string) {
	ctx := context.Background()
	s := mustCreateScalable(t, c, name, 100, 1e-6, bloom.Growth{RedisBloom: true})
	steps := []struct {
		to       int    // add distinct items up to this index
		filters  int    // sub-filters afterwards
		capacity uint64 // total capacity afterwards
	}{{100, 1, 100}, {101, 2, 300}, {300, 2, 300}, {301, 3, 700}, {700, 3, 700}, {701, 4, 1500}}
	from := 0
	for _, st := range steps {
		if st.to-from == 1 { // single adds where the filter grows
			if isNew, err := s.Add(ctx, []byte("item-"+strconv.Itoa(from))); !isNew || err != nil {
				t.Fatalf("add item-%d: %v, %v", from, isNew, err)
			}
		} else if r, err := s.AddMany(ctx, items("item-", from, st.to)); err != nil || len(r) != st.to-from {
			t.Fatalf("AddMany to %d: %d answers, %v", st.to, len(r), err)
		}
		from = st.to
		in, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if in.Items != uint64(st.to) || in.Filters != st.filters || in.Capacity != st.capacity || in.Expansion != 2 || in.NonScaling {
			t.Errorf("after %d adds: %+v, want %d filters, capacity %d", st.to, in.ScalableInfo, st.filters, st.capacity)
		}
		if n, err := s.Count(ctx); n != uint64(st.to) || err != nil {
			t.Errorf("after %d adds: Count %d, %v", st.to, n, err)
		}
	}
	before, _ := s.Info(ctx)
	again, err := s.AddMany(ctx, items("item-", 0, 50))
	if err != nil {
		t.Fatal(err)
	}
	for i, isNew := range again {
		if isNew {
			t.Fatalf("re-add of item-%d reported new", i)
		}
	}
	if isNew, err := s.Add(ctx, []byte("item-700")); isNew || err != nil {
		t.Fatalf("re-add of item-700: %v, %v", isNew, err)
	}
	if after, _ := s.Info(ctx); after.ScalableInfo != before.ScalableInfo {
		t.Errorf("re-adding changed info: %+v → %+v", before.ScalableInfo, after.ScalableInfo)
	}
	allPresent(t, s, items("item-", 0, 701))
}

// allPresent checks that s finds every item of in.
func allPresent(t *testing.T, s *Scalable, in [][]byte) {
	t.Helper()
	ex, err := s.ExistsMany(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range ex {
		if !ok {
			t.Fatalf("false negative %q", in[i])
		}
	}
}

func TestScalableRedisBloomCounters(t *testing.T) {
	_, c := newClient(t)
	checkRedisBloomCounters(t, c, "counters")
}

// TestScalableCluster runs on a 3-master cluster: the counters, clients
// adding at once, names with
// and without hash tags (all keys of a filter in one slot, or the script
// fails with CROSSSLOT), and our slot function against CLUSTER KEYSLOT.
func TestScalableCluster(t *testing.T) {
	ctx := context.Background()
	cl, c := newCluster(t)
	checkRedisBloomCounters(t, c, "counters")
	checkConcurrent(t, c, func() redis.UniversalClient { return redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()}) })
	for _, name := range []string{"plain", "user{42}seen", "a}b", "x{}y", "{", "}{", "{a", "héllo wörld", ""} {
		if got, err := c.ClusterKeySlot(ctx, name).Result(); err != nil || got != int64(slot(name)) {
			t.Errorf("slot(%q) = %d, CLUSTER KEYSLOT %d (%v)", name, slot(name), got, err)
		}
		s := mustCreateScalable(t, c, name, 10, 0.01, bloom.Growth{})
		if _, err := s.AddMany(ctx, items("k", 0, 100)); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		in, err := s.Info(ctx)
		if err != nil || in.Filters < 3 {
			t.Fatalf("%q: %+v, %v", name, in, err)
		}
		for _, sub := range in.Subs {
			if slot(sub.Key) != slot(name) {
				t.Errorf("%q: sub-filter %q in slot %d, not %d", name, sub.Key, slot(sub.Key), slot(name))
			}
		}
		if ok, err := s.Exists(ctx, []byte("k99")); !ok || err != nil {
			t.Errorf("%q: Exists = %v, %v", name, ok, err)
		}
		if err := s.Delete(ctx); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// TestNoRaceScalableSameAsInMemory: for both layouts, a keyed hash and both
// error splits, the Redis filter answers Add and Exists exactly as a
// bloom.Scalable with the same parameters fed the same items, has the same
// counters, and holds the same bytes in each sub-filter.
func TestNoRaceScalableSameAsInMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("one goroutine against the in-memory filter, long under the race detector: the race-free pass (make accuracy) runs it")
	}
	ctx := context.Background()
	_, c := newClient(t)
	key := [16]byte{7}
	cases := []struct {
		name string
		so   bloom.Growth
		opts []Option
		bopt []bloom.Option
	}{
		{"blocked", bloom.Growth{}, nil, nil},
		{"classic", bloom.Growth{}, []Option{WithLayout(bloom.Classic)}, []bloom.Option{bloom.WithLayout(bloom.Classic)}},
		{"redisbloom-classic", bloom.Growth{RedisBloom: true, Expansion: 3}, []Option{WithLayout(bloom.Classic)}, []bloom.Option{bloom.WithLayout(bloom.Classic)}},
		{"keyed", bloom.Growth{RedisBloom: true}, []Option{WithKey(key)}, []bloom.Option{bloom.WithKey(key)}},
		{"blocked-uniform", bloom.Growth{UniformLayout: true}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCreateScalable(t, c, "same-"+tc.name, 100, 0.01, tc.so, tc.opts...)
			mem, err := bloom.NewScalable(100, 0.01, append([]bloom.Option{bloom.WithGrowth(tc.so)}, tc.bopt...)...)
			if err != nil {
				t.Fatal(err)
			}
			in := items("user", 0, 5000)
			in = append(in, items("user", 0, 200)...)  // repeats
			in = append(in, items("more", 0, 5000)...) // several growths in one batch
			got, err := s.AddMany(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range in {
				want, err := mem.Add(it)
				if err != nil || got[i] != want {
					t.Fatalf("AddMany[%d] = %v, in memory %v, %v", i, got[i], want, err)
				}
			}
			for _, it := range [][]byte{[]byte("single"), []byte("user7")} {
				isNew, err := s.Add(ctx, it)
				if want, _ := mem.Add(it); err != nil || isNew != want {
					t.Fatalf("Add(%q) = %v, %v; in memory %v", it, isNew, err, want)
				}
			}
			info, err := s.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.ScalableInfo != mem.Info() {
				t.Fatalf("info %+v, in memory %+v", info.ScalableInfo, mem.Info())
			}
			probes := append(items("probe", 0, 10_000), in[:500]...)
			ex, err := s.ExistsMany(ctx, probes)
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range probes {
				if ex[i] != mem.Test(it) {
					t.Fatalf("ExistsMany[%d] = %v, in memory %v", i, ex[i], mem.Test(it))
				}
			}
			sameSubFilters(t, c, info, mem, tc.bopt)
			// A blocked filter's small sub-filters are classic here too,
			// unless it is uniform; the metadata's version says which.
			classic := info.Layout == bloom.Blocked && !tc.so.UniformLayout
			if got := info.Subs[0].Sizing.Layout != info.Layout; got != classic {
				t.Errorf("first sub-filter %v in a %s filter", info.Subs[0].Sizing, info.Layout)
			}
			format := c.HGet(ctx, s.name, "format").Val()
			if want := map[bool]string{false: scalableFormat, true: scalableFormatSmall}[classic]; format != want {
				t.Errorf("format %q, want %q", format, want)
			}
			// Opened from its metadata, it goes on growing alike.
			var keyOpts []Option
			if tc.name == "keyed" {
				keyOpts = tc.opts
			}
			o, err := OpenScalable(ctx, c, s.name, keyOpts...)
			if err != nil {
				t.Fatal(err)
			}
			more := items("again", 0, 20_000)
			got, err = o.AddMany(ctx, more)
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range more {
				if want, _ := mem.Add(it); got[i] != want {
					t.Fatalf("reopened: AddMany[%d] = %v, in memory %v", i, got[i], want)
				}
			}
			sameSubFilters(t, c, mustInfo(t, o), mem, tc.bopt)
		})
	}
}

// sameSubFilters compares each sub-filter's bitmap with the bytes of the
// in-memory sub-filter, read from its encoding.
func sameSubFilters(t *testing.T, c *redis.Client, info ScalableInfo, mem *bloom.Scalable, bopt []bloom.Option) {
	t.Helper()
	subs := memSubs(t, mem, bopt)
	if len(subs) != len(info.Subs) {
		t.Fatalf("%d sub-filters, in memory %d", len(info.Subs), len(subs))
	}
	for i, sub := range info.Subs {
		f := subs[i]
		if f.Sizing() != sub.Sizing || f.Inserted() != sub.Items {
			t.Fatalf("sub-filter %d: %v with %d items, in memory %v with %d", i, sub.Sizing, sub.Items, f.Sizing(), f.Inserted())
		}
		want := make([]byte, f.Bytes())
		f.ReadAt(want, 0)
		got := []byte(c.Get(context.Background(), sub.Key).Val())
		got = append(got, make([]byte, len(want)-len(got))...) // Redis does not store trailing zeros never written
		if !bytes.Equal(got, want) {
			t.Fatalf("sub-filter %d: the bitmap differs from the in-memory filter", i)
		}
	}
}

// memSubs returns mem's sub-filters, read from its encoding.
func memSubs(t *testing.T, mem *bloom.Scalable, bopt []bloom.Option) []*bloom.Filter {
	t.Helper()
	enc, err := mem.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(enc[128:]) // header and parameter block
	subs := make([]*bloom.Filter, mem.Info().Filters)
	for i := range subs {
		if subs[i], err = bloom.Load(r, bopt...); err != nil {
			t.Fatalf("sub-filter %d: %v", i, err)
		}
	}
	return subs
}

func TestScalableNonScalingFull(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	s := mustCreateScalable(t, c, "full", 50, 0.001, bloom.Growth{NonScaling: true})
	if _, err := s.AddMany(ctx, items("k", 0, 50)); err != nil {
		t.Fatal(err)
	}
	r, err := s.AddMany(ctx, [][]byte{[]byte("k3"), []byte("k4"), []byte("one-too-many"), []byte("k5")})
	if !errors.Is(err, bloom.ErrFull) || len(r) != 2 || r[0] || r[1] {
		t.Fatalf("AddMany past capacity: %v, %v; want [false false] and ErrFull", r, err)
	}
	if _, err := s.Add(ctx, []byte("another")); !errors.Is(err, bloom.ErrFull) {
		t.Fatalf("Add past capacity: %v", err)
	}
	if isNew, err := s.Add(ctx, []byte("k7")); isNew || err != nil {
		t.Fatalf("re-add when full: %v, %v", isNew, err)
	}
	in, err := s.Info(ctx)
	if err != nil || in.Filters != 1 || !in.NonScaling || in.Expansion != 0 || in.Items != 50 || in.Capacity != 50 {
		t.Errorf("info %+v, %v", in.ScalableInfo, err)
	}
}

// TestScalableConcurrent: writers with clients of their own add
// overlapping sets. Every sub-filter but the last holds exactly its
// capacity (growth happened only when the last one was full), the count
// is within the false-positive collisions of the distinct items, and
// nothing is missing.
func TestScalableConcurrent(t *testing.T) {
	srv, c := newClient(t)
	checkConcurrent(t, c, func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: srv.Addr()}) })
}

func checkConcurrent(t *testing.T, c redis.UniversalClient, newClient func() redis.UniversalClient) {
	ctx := context.Background()
	s := mustCreateScalable(t, c, "conc", 500, 0.01, bloom.Growth{RedisBloom: true})
	const writers, per, step = 4, 5000, 2500 // writer w adds u[w·step, w·step+per)
	concurrently(t, writers, newClient, "conc", func(w int, ws *Scalable) error {
		for from := w * step; from < w*step+per; from += 100 {
			if from%1000 == 0 { // some single adds, racing the batches
				if _, err := ws.Add(ctx, []byte("u"+strconv.Itoa(from))); err != nil {
					return err
				}
			}
			if _, err := ws.AddMany(ctx, items("u", from, from+100)); err != nil {
				return err
			}
			if ok, err := ws.Exists(ctx, []byte("u"+strconv.Itoa(from+99))); !ok || err != nil {
				return fmt.Errorf("false negative right after adding: %v, %v", ok, err)
			}
		}
		return nil
	})
	distinct := (writers-1)*step + per
	allPresent(t, s, items("u", 0, distinct))
	in := mustInfo(t, s)
	if in.Items > uint64(distinct) || in.Items < uint64(distinct)*98/100 {
		t.Errorf("%d items counted for %d distinct", in.Items, distinct)
	}
	checkGrowth(t, in)
}

// concurrently runs fn for writers 0 … n-1 at once, each with a client
// of its own (newClient) and filter name opened on it, and waits for
// them; an error fails t.
func concurrently(t *testing.T, n int, newClient func() redis.UniversalClient, name string, fn func(w int, ws *Scalable) error) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			wc := newClient()
			defer wc.Close()
			ws, err := OpenScalable(context.Background(), wc, name)
			if err == nil {
				err = fn(w, ws)
			}
			if err != nil {
				t.Errorf("writer %d: %v", w, err)
			}
		})
	}
	wg.Wait()
}

// checkGrowth checks the counters against the growth rules: sub-filters
// before the last hold exactly their capacity, the last at least one item
// and at most its capacity, and the counts add up.
func checkGrowth(t *testing.T, in ScalableInfo) {
	t.Helper()
	var sum, capacity uint64
	for i, sub := range in.Subs {
		last := i == len(in.Subs)-1
		if !last && sub.Items != sub.Sizing.N || last && (sub.Items == 0 && i > 0 || sub.Items > sub.Sizing.N) {
			t.Errorf("sub-filter %d of %d holds %d items, capacity %d", i, len(in.Subs), sub.Items, sub.Sizing.N)
		}
		sum += sub.Items
		capacity += sub.Sizing.N
	}
	if sum != in.Items || capacity != in.Capacity || len(in.Subs) != in.Filters {
		t.Errorf("sub-filters hold %d items, capacity %d; info %+v", sum, capacity, in.ScalableInfo)
	}
}

// TestScalableNoScript: after SCRIPT FLUSH the next write sends the script
// again (EVALSHA → NOSCRIPT → EVAL), and reads never use scripts.
func TestScalableNoScript(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	c.ScriptFlush(ctx)
	s := mustCreateScalable(t, c, "noscript", 10, 0.01, bloom.Growth{})
	for i := range 5 {
		c.ScriptFlush(ctx)
		if _, err := s.AddMany(ctx, items("x", i*10, i*10+15)); err != nil {
			t.Fatalf("add after SCRIPT FLUSH: %v", err)
		}
	}
	if _, err := s.AddMany(ctx, items("y", 0, 3000)); err != nil { // grows past the small, classic sub-filters
		t.Fatal(err)
	}
	before := commandCalls(t, c)
	if ok, err := s.Exists(ctx, []byte("x3")); !ok || err != nil {
		t.Fatalf("Exists: %v, %v", ok, err)
	}
	if isNew, err := s.Add(ctx, []byte("x3")); isNew || err != nil {
		t.Fatalf("re-add: %v, %v", isNew, err)
	}
	after := commandCalls(t, c)
	if d := after["evalsha"] - before["evalsha"]; d != 1 || after["eval"] != before["eval"] {
		t.Errorf("one Add with the script cached: %d EVALSHA, %d EVAL", d, after["eval"]-before["eval"])
	}
	blocked, classic := 0, 0 // a blocked chain's small sub-filters are classic
	for _, sub := range mustInfo(t, s).Subs {
		if sub.Sizing.Layout == bloom.Blocked {
			blocked++
		} else {
			classic++
		}
	}
	if blocked == 0 || classic == 0 {
		t.Fatalf("%d blocked and %d classic sub-filters: want both kinds in this chain", blocked, classic)
	}
	if d, r := after["getrange"]-before["getrange"], after["bitfield_ro"]-before["bitfield_ro"]; d != blocked || r != classic {
		t.Errorf("one Exists: %d GETRANGE, %d BITFIELD_RO for %d blocked and %d classic sub-filters", d, r, blocked, classic)
	}
	c.ScriptFlush(ctx)
	if err := s.Expire(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	c.ScriptFlush(ctx)
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys left after Delete", n)
	}
}

func mustInfo(t *testing.T, s *Scalable) ScalableInfo {
	t.Helper()
	in, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestFPRScalable grows filters from 100 to 20,000 items at p = 0.01, with
// both error splits, and measures their compound rate on 20,000 other
// items.
func TestFPRScalable(t *testing.T) {
	if raceEnabled {
		t.Skip("a rate measured by one goroutine, long under the race detector: the race-free pass (make accuracy) runs it")
	}
	ctx := context.Background()
	_, c := newClient(t)
	const p = 0.01
	for _, so := range []bloom.Growth{{}, {RedisBloom: true}} {
		s := mustCreateScalable(t, c, fmt.Sprintf("fpr-%v", so.RedisBloom), 100, p, so)
		if _, err := s.AddMany(ctx, items("member", 0, 20_000)); err != nil {
			t.Fatal(err)
		}
		checkRate(t, s, p, items("other", 0, 20_000))
	}
}

// checkRate measures s's false-positive rate on probes, items never
// added, against target p (the 99% upper bound), and checks its counters
// against the growth rules.
func checkRate(t *testing.T, s *Scalable, p float64, probes [][]byte) {
	t.Helper()
	ex, err := s.ExistsMany(context.Background(), probes)
	if err != nil {
		t.Fatal(err)
	}
	fp := 0
	for _, ok := range ex {
		if ok {
			fp++
		}
	}
	in := mustInfo(t, s)
	if ub := wilson(fp, len(ex)); ub > p {
		t.Errorf("%s: rate %d/%d, 99%% upper bound %.4f > %g (%d sub-filters)", s.name, fp, len(ex), ub, p, in.Filters)
	}
	t.Logf("%s: rate %d/%d with %d sub-filters", s.name, fp, len(ex), in.Filters)
	checkGrowth(t, in)
}

// TestScalableOpen: Create and Open, their errors, and the two kinds of
// filter telling each other apart.
func TestScalableOpen(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	mustCreateScalable(t, c, "sc", 1000, 0.01, bloom.Growth{Expansion: 4})
	if _, err := CreateScalable(ctx, c, "sc", 10, 0.1); !errors.Is(err, ErrExists) {
		t.Errorf("second create: %v", err)
	}
	o, err := OpenScalable(ctx, c, "sc")
	if err != nil {
		t.Fatal(err)
	}
	if in := mustInfo(t, o); in.Expansion != 4 || in.Capacity != 1000 || in.P != 0.01 || in.Layout != bloom.Blocked {
		t.Errorf("opened %+v", in)
	}
	if _, err := OpenScalable(ctx, c, "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("open missing: %v", err)
	}
	mustCreate(t, c, "plainfilter", 1000, 0.01)
	if _, err := OpenScalable(ctx, c, "plainfilter"); !errors.Is(err, ErrMetadata) {
		t.Errorf("OpenScalable of a Filter: %v", err)
	}
	if _, err := Open(ctx, c, "sc"); !errors.Is(err, ErrMetadata) {
		t.Errorf("Open of a scalable filter: %v", err)
	}
	if _, err := CreateScalable(ctx, c, "plainfilter", 10, 0.1); !errors.Is(err, ErrExists) {
		t.Errorf("CreateScalable over a Filter: %v", err)
	}
	// A handle whose name now holds a Filter.
	gone := mustCreateScalable(t, c, "replaced", 10, 0.01, bloom.Growth{})
	if err := gone.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, "replaced", 1000, 0.01)
	checkGone(t, gone, ErrMetadata)
	// Damaged metadata.
	good := c.HGetAll(ctx, "sc").Val()
	for name, change := range map[string]func(h map[string]string){
		"v3":         func(h map[string]string) { h["format"] = "bloomery-scalable 3" },
		"v2-classic": func(h map[string]string) { h["layout"] = bloom.Classic.String() },
		"no-n0":      func(h map[string]string) { delete(h, "n0") },
		"bad-p":      func(h map[string]string) { h["p"] = "1.5" },
		"extra":      func(h map[string]string) { h["color"] = "red" },
		"bad-sub":    func(h map[string]string) { h["sub.0"] = "n=1000 p=0.009 bits=12 k=7" },
		"other-plan": func(h map[string]string) { h["sub.0"] = "n=999 p=0.009 bits=9216 k=7" },
		"filters":    func(h map[string]string) { h["filters"] = "2" },
		"items":      func(h map[string]string) { h["items"] = "5" },
		"keyed":      func(h map[string]string) { h["hash"] = bloom.HashSipHash.String() },
		"prefix":     func(h map[string]string) { h["prefix"] = "{elsewhere}:" },
		"non-scale":  func(h map[string]string) { h["expansion"] = "0"; h["filters"] = "2" },
	} {
		h := map[string]string{}
		for k, v := range good {
			h[k] = v
		}
		damaged := "damaged-" + name
		h["prefix"] = "{" + damaged + "}:" + h["id"] + ":"
		change(h)
		c.HSet(ctx, damaged, h)
		if _, err := OpenScalable(ctx, c, damaged); !errors.Is(err, ErrMetadata) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Bad arguments.
	if _, err := CreateScalable(ctx, c, "x", 0, 0.01); !errors.Is(err, bloom.ErrInvalidCapacity) {
		t.Errorf("n0 = 0: %v", err)
	}
	if _, err := CreateScalable(ctx, c, "x", 10, 0.01, WithLayout(bloom.RedisBloom)); !errors.Is(err, ErrInvalid) {
		t.Errorf("RedisBloom layout: %v", err)
	}
	if _, err := CreateScalable(ctx, c, "x", 10, 0.01, WithGrowth(bloom.Growth{RedisBloom: true, FirstShare: 0.9})); err == nil {
		t.Error("RedisBloom with first share 0.9 accepted")
	}
	if _, err := CreateScalable(ctx, c, "x", 1<<30, 1e-7); !errors.Is(err, ErrTooLarge) {
		t.Errorf("first sub-filter over 512 MiB: %v", err)
	}
	// Keyed filters need their key.
	key := [16]byte{1, 2, 3}
	mustCreateScalable(t, c, "keyed", 100, 0.01, bloom.Growth{}, WithKey(key))
	if _, err := OpenScalable(ctx, c, "keyed"); !errors.Is(err, ErrKeyRequired) {
		t.Errorf("keyed without key: %v", err)
	}
	if _, err := OpenScalable(ctx, c, "keyed", WithKey([16]byte{9})); !errors.Is(err, ErrWrongKey) {
		t.Errorf("keyed with the wrong key: %v", err)
	}
	if _, err := OpenScalable(ctx, c, "sc", WithKey(key)); !errors.Is(err, ErrWrongKey) {
		t.Errorf("unkeyed with a key: %v", err)
	}
}

// TestScalableStaleView: a client that has not seen another's growth, or
// a delete and re-create, still finds every item and counts right.
func TestScalableStaleView(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	a := mustCreateScalable(t, c, "shared", 100, 0.01, bloom.Growth{})
	b, err := OpenScalable(ctx, c, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddMany(ctx, items("a", 0, 1000)); err != nil { // grows: b has not seen it
		t.Fatal(err)
	}
	allPresent(t, b, items("a", 0, 1000)) // b has not seen the growth
	bc := &Scalable{client: c, name: "shared", maxBytes: DefaultMaxBytes, meta: b.view()}
	a.AddMany(ctx, items("a", 1000, 2000))
	if isNew, err := bc.Add(ctx, []byte("a1500")); isNew || err != nil { // stale view: the script refuses, b re-reads
		t.Fatalf("stale Add of a present item: %v, %v", isNew, err)
	}
	checkGrowth(t, mustInfo(t, a))
	// Deleted and made again, smaller: b follows the new filter.
	if err := a.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	mustCreateScalable(t, c, "shared", 10, 0.01, bloom.Growth{NonScaling: true})
	if ok, err := b.Exists(ctx, []byte("a5")); ok || err != nil {
		t.Fatalf("Exists in the new filter: %v, %v", ok, err)
	}
	if _, err := b.AddMany(ctx, items("n", 0, 20)); !errors.Is(err, bloom.ErrFull) {
		t.Fatalf("Add to the new non-scaling filter: %v", err)
	}
	if err := b.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	checkGone(t, a, ErrNotFound)
}

// checkGone checks that every call on s, whose filter is gone, fails with
// want.
func checkGone(t *testing.T, s *Scalable, want error) {
	t.Helper()
	ctx := context.Background()
	_, add := s.Add(ctx, []byte("x"))
	_, exists := s.Exists(ctx, []byte("x"))
	_, count := s.Count(ctx)
	_, info := s.Info(ctx)
	for what, err := range map[string]error{"Add": add, "Exists": exists, "Count": count, "Info": info,
		"Expire": s.Expire(ctx, time.Hour), "Delete": s.Delete(ctx)} {
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
}

// TestScalableLifecycle: Expire reaches every key, also sub-filters
// opened later and sub-filter 0 before the first Add; growth stops at
// WithMaxBytes with the answers so far; Delete removes every key.
func TestScalableLifecycle(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	s := mustCreateScalable(t, c, "life", 100, 0.01, bloom.Growth{}, WithMaxBytes(8<<10))
	if err := s.Expire(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	r, err := s.AddMany(ctx, items("x", 0, 10_000))
	if !errors.Is(err, ErrTooLarge) || len(r) < 1000 || len(r) == 10_000 {
		t.Fatalf("growing past 8 KiB: %d answers, %v", len(r), err)
	}
	in := mustInfo(t, s)
	fresh := uint64(0)
	for _, isNew := range r {
		if isNew {
			fresh++
		}
	}
	if in.Bytes > 8<<10 || in.TTL < 59*time.Minute || in.Items != fresh {
		t.Errorf("%d answers; info %+v", len(r), in)
	}
	checkGrowth(t, in)
	keys := append([]string{"life"}, subKeys(in)...)
	for _, k := range keys {
		if ttl := c.PTTL(ctx, k).Val(); ttl < 59*time.Minute {
			t.Errorf("%s: ttl %v", k, ttl)
		}
	}
	if err := s.Expire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if ttl := c.PTTL(ctx, k).Val(); ttl != -1 {
			t.Errorf("%s after persist: ttl %v", k, ttl)
		}
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys left after Delete", n)
	}
	if err := s.Delete(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := CreateScalable(cctx, c, "cancelled", 10, 0.01); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled create: %v", err)
	}
	s = mustCreateScalable(t, c, "life", 10, 0.01, bloom.Growth{})
	if _, err := s.Add(cctx, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled add: %v", err)
	}
	if _, err := s.Exists(cctx, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled exists: %v", err)
	}
	if r, err := s.AddMany(ctx, nil); err != nil || len(r) != 0 {
		t.Errorf("empty batch: %v, %v", r, err)
	}
}

func subKeys(in ScalableInfo) []string {
	var keys []string
	for _, s := range in.Subs {
		keys = append(keys, s.Key)
	}
	return keys
}

// TestScalableRoundTrips: a large batch goes as watched writes, one per
// gatedItems items (a WATCH, then at most one GETRANGE and one SETRANGE
// per item in one transaction), or, when watched writes are off, as
// gated writes (a BITFIELD per MaxOpsPerCommand bit operations in the
// transaction, and one release each), without the add script; a batch
// the last sub-filter cannot take takes the script, one call per chunk
// of scriptOps bit offsets, and one more per growth (the call that finds
// the last sub-filter full stops there; the next carries the new one).
func TestScalableRoundTrips(t *testing.T) {
	ctx := context.Background()
	_, c := newClient(t)
	s := mustCreateScalable(t, c, "rt", 100_000, 0.01, bloom.Growth{})
	const batch = 10_000
	k := int(s.view().subs[0].K)
	per, perCmd := scriptOps/k, MaxOpsPerCommand/k
	txs, sets := (batch+per-1)/per, 0
	for from := 0; from < batch; from += per {
		sets += (min(per, batch-from) + perCmd - 1) / perCmd
	}
	before := commandCalls(t, c)
	if _, err := s.AddMany(ctx, items("w", 0, batch)); err != nil {
		t.Fatal(err)
	}
	after := commandCalls(t, c)
	calls := func(name string) int { return after[name] - before[name] }
	if calls("watch") != txs || calls("exec") != txs || calls("getrange") > batch || calls("setrange") > calls("getrange") ||
		calls("bitfield")+calls("evalsha")+calls("hgetall") != 0 {
		t.Errorf("watched AddMany of %d items (%d per transaction): %v, want %d transactions", batch, per, diffCalls(before, after), txs)
	}
	s.watchOff.Store(time.Now().Add(time.Hour).UnixNano())
	before = commandCalls(t, c)
	if _, err := s.AddMany(ctx, items("b", 0, batch)); err != nil {
		t.Fatal(err)
	}
	after = commandCalls(t, c)
	if calls("exec") != txs || calls("eval") != 2*txs || calls("bitfield") != sets ||
		calls("zrem")+calls("evalsha") != txs || calls("hgetall")+calls("watch") != 0 {
		t.Errorf("gated AddMany of %d items: %v, want %d transactions, %d BITFIELDs", batch, diffCalls(before, after), txs, sets)
	}
	if n := c.Exists(ctx, s.view().pendingKey()).Val(); n != 0 {
		t.Error("reservations left after AddMany")
	}
	g := mustCreateScalable(t, c, "grows", 10, 0.01, bloom.Growth{})
	before = commandCalls(t, c)
	if _, err := g.AddMany(ctx, items("g", 0, 150)); err != nil { // 10+20+40+80: three growths, one chunk
		t.Fatal(err)
	}
	if got := commandCalls(t, c)["evalsha"] - before["evalsha"]; got != 4 {
		t.Errorf("AddMany growing three times: %d script calls, want 4", got)
	}
}

// diffCalls is the commands counted between two commandCalls.
func diffCalls(before, after map[string]int) map[string]int {
	d := map[string]int{}
	for name, n := range after {
		if n != before[name] {
			d[name] = n - before[name]
		}
	}
	return d
}
