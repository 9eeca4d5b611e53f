package redisfilter_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bloomery/bloom/cuckoo"
	"github.com/bloomery/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// A cuckoo filter in Redis, as CF.RESERVE sessions 1000 makes one: add,
// test, delete, and Info's counters as CF.INFO reports them.
func ExampleCreateCuckoo() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	c, err := redisfilter.CreateCuckoo(ctx, client, "sessions", 1000)
	if errors.Is(err, redisfilter.ErrExists) {
		c, err = redisfilter.OpenCuckoo(ctx, client, "sessions")
	}
	if err != nil {
		panic(err)
	}
	st, err := c.AddMany(ctx, [][]byte{[]byte("s1"), []byte("s2"), []byte("s3")})
	if err != nil {
		panic(err)
	}
	deleted, err := c.Delete(ctx, []byte("s2"))
	if err != nil {
		panic(err)
	}
	found, err := c.TestMany(ctx, [][]byte{[]byte("s1"), []byte("s2")})
	if err != nil {
		panic(err)
	}
	in, err := c.Info(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(st, deleted, found)
	fmt.Println(in.Buckets, in.BucketSize, in.Items, in.Deleted)
	// Output:
	// [1 1 1] true [true false]
	// 512 2 2 1
}

// A filter built in memory goes to Redis with UploadCuckoo and comes back
// with Download: same bytes, same answers.
func ExampleUploadCuckoo() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	f, err := cuckoo.New(100)
	if err != nil {
		panic(err)
	}
	f.AddString("apple")
	c, err := redisfilter.UploadCuckoo(ctx, client, "fruit", f)
	if err != nil {
		panic(err)
	}
	ok, err := c.Test(ctx, []byte("apple"))
	if err != nil {
		panic(err)
	}
	back, err := c.Download(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(ok, back.TestString("apple"), back.Info() == f.Info())
	// Output: true true true
}
