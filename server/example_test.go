package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/bloomery/bloom/server"
	"github.com/redis/go-redis/v9"
)

// A server in this process, with nothing on disk, used through go-redis's
// RedisBloom API: a Bloom filter of visitors, and a cuckoo filter (which
// deletes) of the sessions open now.
func ExampleNew() {
	srv, err := server.New(server.Config{
		Dir:    "-", // keep nothing on disk
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	defer c.Close()

	added, err := c.BFAdd(ctx, "visitors", "alice").Result()
	fmt.Println("add alice:", added, err)
	added, _ = c.BFAdd(ctx, "visitors", "alice").Result()
	fmt.Println("add alice again:", added)
	found, _ := c.BFExists(ctx, "visitors", "alice").Result()
	fmt.Println("alice:", found)
	found, _ = c.BFExists(ctx, "visitors", "bob").Result()
	fmt.Println("bob:", found)
	info, _ := c.BFInfo(ctx, "visitors").Result()
	fmt.Printf("capacity %d, items %d\n", info.Capacity, info.ItemsInserted)

	c.CFAdd(ctx, "sessions", "s1")
	c.CFAdd(ctx, "sessions", "s2")
	open, _ := c.CFMExists(ctx, "sessions", "s1", "s2", "s3").Result()
	fmt.Println("sessions s1 s2 s3:", open)
	ended, _ := c.CFDel(ctx, "sessions", "s1").Result()
	fmt.Println("s1 ended:", ended, "open:", c.CFExists(ctx, "sessions", "s1").Val())
	// Output:
	// add alice: true <nil>
	// add alice again: false
	// alice: true
	// bob: false
	// capacity 100, items 1
	// sessions s1 s2 s3: [true true false]
	// s1 ended: true open: false
}
