package guard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/bloomery/bloom/server"
)

// The servers the examples use, started by TestMain: a real redis-server
// and a bloomery server in this process.
var redisAddr, bloomeryAddr string

func TestMain(m *testing.M) {
	redisSrv, err := redistest.StartMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisAddr = redisSrv.Addr()
	srv, err := server.New(server.Config{Dir: "-", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go srv.Serve(ln)
	bloomeryAddr = ln.Addr().String()
	code := m.Run()
	srv.Shutdown(context.Background())
	redisSrv.Close()
	os.Exit(code)
}
