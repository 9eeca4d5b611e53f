package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/bloomery/bloom"
)

// TestMemstoreChargesWhatItMakes: creating a filter charges the memory
// budget exactly its first sub-filter's bytes (a small one in Bloomery's
// layout is classic and smaller than Size's blocked one, docs/DESIGN.md
// §5), growth charges each new one, and deleting the keys gives it all
// back.
func TestMemstoreChargesWhatItMakes(t *testing.T) {
	ctx := context.Background()
	for _, layout := range []bloom.Layout{bloom.Blocked, bloom.RedisBloom} {
		for _, o := range []createOpts{
			defaultCreate, // 100 at 0.005: classic in Bloomery's layout
			{rate: 0.001, capacity: 20, expansion: 2},
			{rate: 0.01, capacity: 5000, expansion: 4},
			{rate: 0.02, capacity: 50, expansion: 0, nonScaling: true},
		} {
			t.Run(fmt.Sprintf("%s/%d@%g/x%d", layout, o.capacity, o.rate, o.expansion), func(t *testing.T) {
				m := newMemstore(0, 0)
				m.layout = layout
				if err := m.Reserve(ctx, "r", o); err != nil {
					t.Fatal(err)
				}
				n := 3 * o.capacity // grows
				if o.nonScaling {
					n = o.capacity
				}
				items := make([][]byte, n)
				for i := range items {
					items[i] = fmt.Appendf(nil, "item:%d", i)
				}
				res := make([]addResult, len(items))
				if _, err := m.Add(ctx, "a", items, &o, res); err != nil {
					t.Fatal(err)
				}
				var want uint64
				for _, k := range []string{"r", "a"} {
					want += m.ks.get(k).filter.Bytes()
				}
				if got := m.used.Load(); got != want {
					t.Errorf("%d bytes charged for filters of %d", got, want)
				}
				if n, err := m.Delete(ctx, []string{"r", "a"}); err != nil || n != 2 {
					t.Fatalf("Delete: %d, %v", n, err)
				}
				if got := m.used.Load(); got != 0 {
					t.Errorf("%d bytes charged after deleting every key", got)
				}
			})
		}
	}
}
