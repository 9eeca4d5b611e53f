package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The test harness: a server in this process on a loopback port, go-redis
// clients for it (RESP2 or RESP3), and raw connections that send exact
// bytes and read exact replies, for error texts and protocol checks.

// startServer starts a server with cfg on 127.0.0.1:0 and shuts it down
// when the test ends. Dir defaults to "-" (nothing on disk) and the log is
// discarded. It returns the server and its address.
func startServer(tb testing.TB, cfg Config) (*Server, string) {
	tb.Helper()
	return startServerTuned(tb, cfg, nil)
}

// startServerTuned is startServer, with tune (if not nil) applied to the
// server before it serves: for settings New refuses, such as input
// limits below Redis's minimums that tests reach with small inputs.
func startServerTuned(tb testing.TB, cfg Config, tune func(*Server)) (*Server, string) {
	tb.Helper()
	if cfg.Dir == "" {
		cfg.Dir = "-"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.Addr = "127.0.0.1:0"
	srv, err := New(cfg)
	if err != nil {
		tb.Fatalf("server.New: %v", err)
	}
	if tune != nil {
		tune(srv)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			tb.Errorf("Serve returned %v after Shutdown, want nil", err)
		}
	})
	return srv, ln.Addr().String()
}

// newClient returns a go-redis client speaking RESP proto (2 or 3) to
// addr, closed when the test ends. opts adjust its options.
func newClient(tb testing.TB, addr string, proto int, opts ...func(*redis.Options)) *redis.Client {
	tb.Helper()
	o := &redis.Options{
		Addr:                     addr,
		Protocol:                 proto,
		MaxRetries:               -1, // a failure must show, not be retried away
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { c.Close() })
	return c
}

// clientFactory returns newClient for addr and proto, in the form
// runBehaviourTable takes.
func clientFactory(addr string, proto int) func(t *testing.T) *redis.Client {
	return func(t *testing.T) *redis.Client { return newClient(t, addr, proto) }
}

// rawConn is a plain TCP connection for exact bytes: send what the test
// says, read replies as the bytes the server wrote.
type rawConn struct {
	tb testing.TB
	nc net.Conn
	br *bufio.Reader
}

// rawTimeout bounds every read and write of a rawConn.
const rawTimeout = 10 * time.Second

// dialRaw connects to addr; the connection is closed when the test ends.
func dialRaw(tb testing.TB, addr string) *rawConn {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, rawTimeout)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { nc.Close() })
	return &rawConn{tb: tb, nc: nc, br: bufio.NewReader(nc)}
}

// send writes s as it is.
func (r *rawConn) send(s string) {
	r.tb.Helper()
	r.nc.SetWriteDeadline(time.Now().Add(rawTimeout))
	if _, err := io.WriteString(r.nc, s); err != nil {
		r.tb.Fatalf("write %q: %v", truncate(s, 80), err)
	}
}

// reply reads one whole reply and returns its bytes.
func (r *rawConn) reply() string {
	r.tb.Helper()
	r.nc.SetReadDeadline(time.Now().Add(rawTimeout))
	s, err := readRawReply(r.br)
	if err != nil {
		r.tb.Fatalf("read reply: %v (read so far %q)", err, s)
	}
	return s
}

// do sends args as a RESP array and returns the raw reply.
func (r *rawConn) do(args ...string) string {
	r.tb.Helper()
	r.send(encodeCommand(args...))
	return r.reply()
}

// expectClosed fails the test unless the server closes the connection
// (after any replies still buffered) within rawTimeout. It returns what
// was read before the end.
func (r *rawConn) expectClosed() string {
	r.tb.Helper()
	r.nc.SetReadDeadline(time.Now().Add(rawTimeout))
	b, err := io.ReadAll(r.br)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		r.tb.Fatalf("connection not closed by the server: %v (read %q)", err, truncate(string(b), 200))
	}
	return string(b)
}

// isReset reports a connection reset: the server closed with unread
// input, which TCP reports as a reset rather than an end of stream.
func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// encodeCommand encodes args as a RESP array of bulk strings.
func encodeCommand(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// readRawReply reads one RESP2 or RESP3 reply, nested aggregates
// included, and returns its bytes exactly.
func readRawReply(br *bufio.Reader) (string, error) {
	var b strings.Builder
	err := readRawInto(br, &b)
	return b.String(), err
}

func readRawInto(br *bufio.Reader, b *strings.Builder) error {
	line, err := br.ReadString('\n')
	b.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("bad reply line %q", line)
	}
	n, nerr := strconv.Atoi(line[1 : len(line)-2])
	switch line[0] {
	case '+', '-', ':', '_', '#', ',', '(':
		return nil
	case '$', '=', '!':
		if nerr != nil {
			return fmt.Errorf("bad length in %q", line)
		}
		if n < 0 {
			return nil
		}
		body := make([]byte, n+2)
		_, err := io.ReadFull(br, body)
		b.Write(body)
		return err
	case '*', '~', '>', '%', '|':
		if nerr != nil {
			return fmt.Errorf("bad count in %q", line)
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range max(n, 0) {
			if err := readRawInto(br, b); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown reply type in %q", line)
}

// Raw reply builders, for exact expectations.

func rawErr(msg string) string  { return "-" + msg + "\r\n" }
func rawInt(n int64) string     { return ":" + strconv.FormatInt(n, 10) + "\r\n" }
func rawBulk(s string) string   { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
func rawStatus(s string) string { return "+" + s + "\r\n" }
func rawArray(elems ...string) string {
	return "*" + strconv.Itoa(len(elems)) + "\r\n" + strings.Join(elems, "")
}

// arityErr is Redis's wrong-arity error for cmd (lower case).
func arityErr(cmd string) string {
	return "ERR wrong number of arguments for '" + cmd + "' command"
}
