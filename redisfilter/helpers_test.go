package redisfilter

import (
	"context"
	"strconv"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// newClient starts a real redis-server for the test and returns a client.
func newClient(t *testing.T, args ...string) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t, args...)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: 3})
	t.Cleanup(func() { c.Close() })
	return srv, c
}

// newCluster starts a real 3-master cluster and returns a cluster client.
func newCluster(t *testing.T) (*redistest.Cluster, *redis.ClusterClient) {
	t.Helper()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { c.Close() })
	return cl, c
}

func items(prefix string, from, to int) [][]byte {
	out := make([][]byte, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, []byte(prefix+strconv.Itoa(i)))
	}
	return out
}

// commandCalls reads INFO commandstats: calls per command, lower case.
func commandCalls(t *testing.T, c *redis.Client) map[string]int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return redistest.CommandCalls(info)
}

func mustCreate(t *testing.T, c redis.UniversalClient, name string, n uint64, p float64, opts ...Option) *Filter {
	t.Helper()
	f, err := Create(context.Background(), c, name, n, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
