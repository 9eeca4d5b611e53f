package guard_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"sync"

	"github.com/bloomery/bloom/guard"
)

// users is a stand-in for a table: the example's source of truth.
type users struct {
	mu      sync.Mutex
	rows    map[string]string
	queries int
}

func (u *users) load(_ context.Context, id string) (string, bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.queries++
	name, ok := u.rows[id]
	return name, ok, nil
}

func (u *users) ids(context.Context) iter.Seq2[string, error] {
	u.mu.Lock()
	ids := maps.Keys(maps.Clone(u.rows))
	u.mu.Unlock()
	return func(yield func(string, error) bool) {
		for id := range ids {
			if !yield(id, nil) {
				return
			}
		}
	}
}

func (u *users) insert(id, name string) {
	u.mu.Lock()
	u.rows[id] = name
	u.mu.Unlock()
}

func Example() {
	db := &users{rows: map[string]string{"u1": "Ada", "u2": "Grace"}}
	ctx := context.Background()
	g, err := guard.New(ctx, &guard.Options[string]{
		Load: db.load, // the source of truth
		IDs:  db.ids,  // every existing ID, for the filter
	})
	if err != nil {
		panic(err)
	}
	defer g.Close()

	name, err := g.Get(ctx, "u1")
	fmt.Println(name, err)
	_, err = g.Get(ctx, "no-such-user")
	fmt.Println(errors.Is(err, guard.ErrNotFound))
	fmt.Println("queries:", db.queries) // the absent ID cost none

	// A new row: the filter learns the ID before the insert commits.
	err = g.Write(ctx, "u3", func(ctx context.Context) error {
		db.insert("u3", "Barbara") // INSERT … in a real service
		return nil
	})
	if err != nil {
		panic(err)
	}
	name, err = g.Get(ctx, "u3")
	fmt.Println(name, err)
	// Output:
	// Ada <nil>
	// true
	// queries: 1
	// Barbara <nil>
}

// Many concurrent requests for one ID that is not cached cost one query.
func ExampleGuard_Get_singleflight() {
	db := &users{rows: map[string]string{"u1": "Ada"}}
	ctx := context.Background()
	g, err := guard.New(ctx, &guard.Options[string]{Load: db.load, IDs: db.ids})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() { g.Get(ctx, "u1") })
	}
	wg.Wait()
	fmt.Println("queries:", db.queries)
	// Output: queries: 1
}

func ExampleGuard_Rebuild() {
	db := &users{rows: map[string]string{"u1": "Ada", "u2": "Grace"}}
	ctx := context.Background()
	g, err := guard.New(ctx, &guard.Options[string]{Load: db.load, IDs: db.ids})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	delete(db.rows, "u2") // deleted behind the guard's back
	if err := g.Rebuild(ctx); err != nil {
		panic(err)
	}
	_, err = g.Get(ctx, "u2")
	fmt.Println(errors.Is(err, guard.ErrNotFound), "queries:", db.queries)
	fmt.Println("rebuilds:", g.Stats().Rebuilds)
	// Output:
	// true queries: 0
	// rebuilds: 2
}

func ExampleGuard_Removed() {
	db := &users{rows: map[string]string{"u1": "Ada"}}
	ctx := context.Background()
	g, err := guard.New(ctx, &guard.Options[string]{
		Load: db.load, IDs: db.ids,
		Membership: guard.NewMemoryCounting(), // can delete
	})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	g.Get(ctx, "u1") // cached
	delete(db.rows, "u1")
	if err := g.Removed(ctx, "u1"); err != nil {
		panic(err)
	}
	_, err = g.Get(ctx, "u1")
	fmt.Println(errors.Is(err, guard.ErrNotFound))
	// Output: true
}
