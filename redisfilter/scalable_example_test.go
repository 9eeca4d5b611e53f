package redisfilter_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// A filter that grows like RedisBloom's BF.RESERVE seen 0.01 100: its
// counters are those BF.INFO would report after the same adds.
func ExampleCreateScalable() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	s, err := redisfilter.CreateScalable(ctx, client, "seen", 100, 0.01, redisfilter.WithGrowth(bloom.Growth{RedisBloom: true}))
	if errors.Is(err, redisfilter.ErrExists) {
		s, err = redisfilter.OpenScalable(ctx, client, "seen")
	}
	if err != nil {
		panic(err)
	}
	isNew, err := s.AddMany(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("a")})
	if errors.Is(err, bloom.ErrFull) { // only for NonScaling filters
		fmt.Println("full after", len(isNew), "items")
	} else if err != nil {
		panic(err)
	}
	in, err := s.Info(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(isNew, in.Capacity, in.Filters, in.Items, in.Expansion)
	// Output: [true true false] 100 1 2 2
}

// A process that adds to a filter in batches keeps a copy of its bits
// within a budget: its batches then need no reads from Redis, one round
// trip each. Another client's write is noticed by the filter's token;
// the copy is dropped and the answers stay right.
func ExampleWithMirrors() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	copies := redisfilter.NewMirrors(64 << 20) // for all the process's filters
	defer copies.Close()
	s, err := redisfilter.CreateScalable(ctx, client, "visited", 1_000_000, 0.001, redisfilter.WithMirrors(copies))
	if err != nil {
		panic(err)
	}
	batch := [][]byte{[]byte("/a"), []byte("/b"), []byte("/c"), []byte("/d"), []byte("/e"), []byte("/f"), []byte("/g"), []byte("/h")}
	first, err := s.AddMany(ctx, batch) // loads the copy, then writes
	if err != nil {
		panic(err)
	}
	again, err := s.AddMany(ctx, append(batch[:2:2], []byte("/i"))) // from the copy: one round trip
	if err != nil {
		panic(err)
	}
	st := copies.Stats()
	fmt.Println(first[0], again, s.Mirrored(), st.Loads, st.Conflicts)
	// Output: true [false false true] true 1 0
}
