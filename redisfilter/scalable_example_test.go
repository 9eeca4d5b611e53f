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
