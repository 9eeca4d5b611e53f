package interop

import (
	"os"
	"strconv"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
	goredis "github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/logx"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
)

func TestMain(m *testing.M) {
	logx.Disable() // go-zero logs slow calls and breaker trips to stdout
	os.Exit(m.Run())
}

// clients starts a real redis-server and returns a go-redis client (ours)
// and a go-zero client, made as go-zero users make theirs, on it.
func clients(tb testing.TB) (*goredis.Client, *zredis.Redis) {
	tb.Helper()
	srv := redistest.Start(tb)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	tb.Cleanup(func() { c.Close() })
	z, err := zredis.NewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType})
	if err != nil {
		tb.Fatal(err)
	}
	return c, z
}

func items(prefix string, from, to int) [][]byte {
	out := make([][]byte, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, []byte(prefix+strconv.Itoa(i)))
	}
	return out
}
