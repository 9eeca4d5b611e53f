package bloom

import (
	"math"
	"sync"
	"testing"
)

// TestSizeCache: a memoised sizing is the one computed, for every layout,
// n and p it was asked for; many distinct rates (as a client sending a
// fresh rate with every request would) only replace slots, and the
// memoised answers stay right.
func TestSizeCache(t *testing.T) {
	sizeCache.reset()
	type key struct {
		layout Layout
		n      uint64
		p      float64
	}
	first := map[key]Sizing{}
	for i := range 3 * sizeCacheSlots {
		k := key{Layout(1 + i%2), uint64(1 + i%7), 0.01 + float64(i)*1e-6}
		s, err := Size(k.n, k.p, k.layout)
		if err != nil {
			t.Fatal(err)
		}
		first[k] = s
	}
	filled := 0
	for i := range sizeCache.slots {
		if sizeCache.slots[i].Load() != nil {
			filled++
		}
	}
	if filled > sizeCacheSlots {
		t.Fatalf("%d slots filled", filled)
	}
	for k, want := range first {
		if got, err := Size(k.n, k.p, k.layout); err != nil || got != want {
			t.Fatalf("Size%v = %v, %v; first time %v", k, got, err, want)
		}
		sizeCache.reset()
		if got, _ := Size(k.n, k.p, k.layout); got != want {
			t.Fatalf("Size%v = %v uncached, %v cached", k, got, want)
		}
	}
	// Rates that differ in the last bit, and n that differ by one, are
	// different keys.
	p := 0.01
	q := math.Nextafter(p, 1)
	a, _ := Size(1e6, p, Blocked)
	b, _ := Size(1e6, q, Blocked)
	c, _ := Size(1e6+1, p, Blocked)
	if a.P != p || b.P != q || c.N != 1e6+1 {
		t.Fatalf("cache mixed up keys: %v %v %v", a, b, c)
	}
}

// TestSizeConcurrent sizes from many goroutines at once, with shared and
// distinct rates, so that the race detector sees the cache and the block
// tables being extended and read together.
func TestSizeConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	results := make([][]Sizing, 4)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				p := math.Pow(10, -0.5-float64(i%20)*0.55) // 0.3 … 1e-11, the same in every goroutine
				for _, layout := range []Layout{Blocked, Classic} {
					s, err := Size(uint64(10+i), p, layout)
					if err != nil {
						t.Error(err)
						return
					}
					results[g] = append(results[g], s)
				}
			}
		}()
	}
	wg.Wait()
	for g := 1; g < len(results); g++ {
		for i := range results[0] {
			if results[g][i] != results[0][i] {
				t.Fatalf("goroutine %d got %v, goroutine 0 %v", g, results[g][i], results[0][i])
			}
		}
	}
}
