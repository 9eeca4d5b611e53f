package resp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
)

// TestAgainstRedis sends the cases with default limits to a real
// redis-server (7.0 in CI) and checks that it answers as the commands and
// the error the case expects imply: a reply to each command, then
// "-ERR <message>" and a closed connection for a protocol error, or
// silence and an open connection for a stream cut short. The case table is
// thereby Redis's behaviour, not only ours.
func TestAgainstRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	open := redistest.Start(t)
	// redistest checks readiness with a PING, so the password comes after.
	withPass := redistest.Start(t)
	setPassword(t, withPass.Addr())
	t.Run("open", func(t *testing.T) {
		for _, tc := range readCases {
			if tc.lim != (Limits{}) {
				continue
			}
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				compareWithRedis(t, open.Addr(), tc, redisReply)
			})
		}
	})
	t.Run("auth", func(t *testing.T) {
		for i, tc := range authCases {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				compareWithRedis(t, withPass.Addr(), tc, func(*testing.T, []string) string {
					return "-NOAUTH Authentication required.\r\n"
				})
			})
		}
	})
}

func setPassword(t *testing.T, addr string) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	const set = "CONFIG SET requirepass secret\r\n"
	if _, err := conn.Write([]byte(set)); err != nil {
		t.Fatal(err)
	}
	ok := make([]byte, 5)
	if _, err := io.ReadFull(conn, ok); err != nil || string(ok) != "+OK\r\n" {
		t.Fatalf("%s: %q, %v", set, ok, err)
	}
}

// redisReply is Redis's reply to a PING or ECHO command.
func redisReply(t *testing.T, c []string) string {
	switch {
	case len(c) == 1 && strings.EqualFold(c[0], "PING"):
		return "+PONG\r\n"
	case len(c) == 2 && strings.EqualFold(c[0], "ECHO"):
		return "$" + strconv.Itoa(len(c[1])) + "\r\n" + c[1] + "\r\n"
	}
	t.Fatalf("case with default limits uses %q: only PING and ECHO can be checked against Redis", c)
	return ""
}

func compareWithRedis(t *testing.T, addr string, tc readCase, reply func(*testing.T, []string) string) {
	var want strings.Builder
	for _, c := range tc.want {
		want.WriteString(reply(t, c))
	}
	wantClosed := tc.err != eof && tc.err != unexpectedEOF
	if strings.HasPrefix(tc.err, "Protocol error: ") {
		want.WriteString("-ERR " + tc.err + "\r\n")
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(tc.in)); err != nil && !wantClosed {
		t.Fatal(err)
	}
	got := make([]byte, want.Len())
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.ReadFull(conn, got)
	got = got[:n]
	if err != nil {
		t.Fatalf("redis answered %q, then %v; want %q", got, err, want.String())
	}
	// Then nothing more: the end of the stream if Redis closes, silence
	// if it waits for more of the command.
	wait := 10 * time.Second
	if !wantClosed {
		wait = 150 * time.Millisecond
	}
	conn.SetReadDeadline(time.Now().Add(wait))
	var more bytes.Buffer
	_, err = io.Copy(&more, conn)
	closed := err == nil || isReset(err)
	if string(got) != want.String() || more.Len() > 0 || closed != wantClosed {
		t.Errorf("redis answered %q%q, closed %v; want %q, closed %v",
			got, more.Bytes(), closed, want.String(), wantClosed)
	}
}

func isReset(err error) bool {
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout()) && !errors.Is(err, os.ErrDeadlineExceeded)
}
