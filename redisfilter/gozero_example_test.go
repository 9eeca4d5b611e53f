package redisfilter_test

import (
	"context"
	"fmt"

	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// A service that used go-zero's bloom.New(store, "seen-users", 20<<20)
// opens the same key with the same bit count and keeps its data.
func ExampleOpenGoZero() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	f, err := redisfilter.OpenGoZero(client, "seen-users", 20<<20)
	if err != nil {
		panic(err)
	}
	isNew, err := f.Add(ctx, []byte("user-42"))
	if err != nil {
		panic(err)
	}
	found, err := f.ExistsMany(ctx, [][]byte{[]byte("user-42"), []byte("user-43")})
	if err != nil {
		panic(err)
	}
	fmt.Println(isNew, found)
	// Output: true [true false]
}
