package guard_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bloomery/bloom/guard"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// Every instance of a service shares one filter in Redis: the first to
// start fills it, the others find it ready, and a write through any of
// them is seen by all.
func ExampleNewRedisFilter() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	db := &users{rows: map[string]string{"u1": "Ada"}}
	instance := func() *guard.Guard[string] {
		m, err := guard.NewRedisFilter(client, "users:ids", nil, redisfilter.WithKey([16]byte{ /* a secret */ 7}))
		if err != nil {
			panic(err)
		}
		g, err := guard.New(ctx, &guard.Options[string]{
			Load: db.load, IDs: db.ids, Membership: m,
			// Writes commit within this; a shared rebuild waits it out.
			CommitWindow: 200 * time.Millisecond,
		})
		if err != nil {
			panic(err)
		}
		return g
	}
	a, b := instance(), instance()
	defer a.Close()
	defer b.Close()
	if err := a.Write(ctx, "u2", func(context.Context) error { db.insert("u2", "Grace"); return nil }); err != nil {
		panic(err)
	}
	name, err := b.Get(ctx, "u2")
	fmt.Println(name, err)
	_, err = b.Get(ctx, "u3")
	fmt.Println(errors.Is(err, guard.ErrNotFound))
	fmt.Println("rebuilds:", a.Stats().Rebuilds, b.Stats().Rebuilds)
	// Output:
	// Grace <nil>
	// true
	// rebuilds: 1 0
}

// The filter on a server speaking RedisBloom's commands: bloomery serve
// here; Redis with RedisBloom, or Redis 8, alike.
func ExampleNewBF() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: bloomeryAddr})
	defer client.Close()
	db := &users{rows: map[string]string{"u1": "Ada", "u2": "Grace"}}
	m, err := guard.NewBF(client, "users:ids", nil)
	if err != nil {
		panic(err)
	}
	g, err := guard.New(ctx, &guard.Options[string]{
		Load: db.load, IDs: db.ids, Membership: m, CommitWindow: 200 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	info, _ := client.BFInfo(ctx, "users:ids").Result()
	fmt.Println("capacity:", info.Capacity, "items:", info.ItemsInserted)
	_, err = g.Get(ctx, "u9")
	fmt.Println(errors.Is(err, guard.ErrNotFound), "queries:", db.queries)
	// Output:
	// capacity: 4 items: 2
	// true queries: 0
}
