package redisfilter_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
)

// redisAddr is the Redis server the examples use: a real redis-server
// that TestMain starts for them.
var redisAddr = "localhost:6379"

func TestMain(m *testing.M) {
	srv, err := redistest.StartMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisAddr = srv.Addr()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}
