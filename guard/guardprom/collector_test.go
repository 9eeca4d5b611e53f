package guardprom_test

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/bloomery/bloom/guard"
	"github.com/bloomery/bloom/guard/guardprom"
	"github.com/prometheus/client_golang/prometheus"
)

func newGuard(t testing.TB) *guard.Guard[string] {
	rows := map[string]string{"a": "1", "b": "2"}
	g, err := guard.New(context.Background(), &guard.Options[string]{
		Load: func(_ context.Context, id string) (string, bool, error) { v, ok := rows[id]; return v, ok, nil },
		IDs: func(context.Context) iter.Seq2[string, error] {
			return func(yield func(string, error) bool) {
				for id := range rows {
					if !yield(id, nil) {
						return
					}
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCollector(t *testing.T) {
	g := newGuard(t)
	defer g.Close()
	ctx := context.Background()
	g.Get(ctx, "a")
	g.Get(ctx, "a")
	g.Get(ctx, "zzz")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(guardprom.NewCollector("app", "users", g))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		m := f.GetMetric()[0]
		if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "guard" || l[0].GetValue() != "users" {
			t.Fatalf("%s labels %v", f.GetName(), l)
		}
		got[f.GetName()] = m.GetCounter().GetValue()
	}
	if len(got) != 16 {
		t.Fatalf("%d metrics, want 16: %v", len(got), got)
	}
	for name, want := range map[string]float64{
		"app_guard_requests_total": 3, "app_guard_cache_hits_total": 1,
		"app_guard_loads_total": 1, "app_guard_rebuilds_total": 1,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	// absent: "zzz" is a false positive or answered by the filter.
	s := g.Stats()
	if s.Absent+s.FalsePositives != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func ExampleNewCollector() {
	g := newGuard(nil)
	defer g.Close()
	g.Get(context.Background(), "a")
	reg := prometheus.NewRegistry()
	reg.MustRegister(guardprom.NewCollector("shop", "users", g))
	// Serve reg with promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).
	families, _ := reg.Gather()
	for _, f := range families[:3] {
		fmt.Println(f.GetName(), f.GetMetric()[0].GetCounter().GetValue())
	}
	// Output:
	// shop_guard_absent_total 0
	// shop_guard_added_total 0
	// shop_guard_cache_errors_total 0
}
