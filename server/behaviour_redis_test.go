package server

import (
	"strings"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
)

// The generic commands compared byte for byte with a real redis-server
// 7.0 (started with one database, as this server has): the same commands
// on both, after the same setup (a filter here, a string there, under the
// same keys), must get the same reply bytes. Replies that depend on the
// server's identity (HELLO, INFO, CLIENT ID, COMMAND) are not compared.

// sameAsRedis sends each command to both connections in turn and fails
// the test for each reply that differs.
func sameAsRedis(t *testing.T, ours, redis *rawConn, cmds [][]string) {
	t.Helper()
	for _, args := range cmds {
		got, want := ours.do(args...), redis.do(args...)
		if got != want {
			t.Errorf("%q: got %q, redis-server answers %q", args, got, want)
		}
	}
}

func TestBehaviourMatchesRedis(t *testing.T) {
	_, addr := startServer(t, Config{})
	red := redistest.Start(t, "--databases", "1")
	ours, theirs := dialRaw(t, addr), dialRaw(t, red.Addr())
	for _, k := range []string{"k", "k2"} {
		ours.do("BF.ADD", k, "x")
		theirs.do("SET", k, "x")
	}
	long := strings.Repeat("a", 200)
	sameAsRedis(t, ours, theirs, [][]string{
		// Unknown commands and subcommands, arity.
		{"foo", "a", "b"}, {"FOO"}, {"nosuch", long, "b"}, {"nosuch", "x", long}, {long},
		{"nosuch", "a\r\nb", "c d", ""}, {"CLIENT", "FOO"}, {"config", "foo", "bar"}, {"COMMAND", "x"},
		{"CLIENT", long},
		{"EXISTS"}, {"DEL"}, {"UNLINK"}, {"TYPE"}, {"TYPE", "a", "b"}, {"KEYS"}, {"KEYS", "a", "b"}, {"SCAN"},
		{"RENAME", "a"}, {"EXPIRE", "a"}, {"PEXPIREAT", "a"}, {"TTL"}, {"PTTL", "a", "b"}, {"EXPIRETIME"},
		{"PERSIST"}, {"DBSIZE", "x"}, {"PING", "a", "b"}, {"ECHO"}, {"ECHO", "a", "b"}, {"SELECT"}, {"AUTH"},
		{"CLIENT"}, {"CONFIG"}, {"COMMAND", "COUNT", "x"}, {"CLIENT", "SETNAME"}, {"CLIENT", "GETNAME", "x"},
		{"CLIENT", "ID", "x"}, {"CONFIG", "GET"}, {"CONFIG", "SET", "a"}, {"LASTSAVE", "x"}, {"SAVE", "x"},
		{"FLUSHDB", "a", "b"}, {"FLUSHALL", "ASYNC", "x"}, {"FLUSHDB", "foo"}, {"BGSAVE", "x"},
		{"SHUTDOWN", "FOO"},
		// Connection commands.
		{"PING"}, {"PING", "hi"}, {"ECHO", "a\r\nb"}, {"ECHO", ""}, {"SELECT", "0"}, {"SELECT", "1"},
		{"SELECT", "abc"}, {"SELECT", "-1"}, {"HELLO", "4"}, {"HELLO", "0"}, {"HELLO", "abc"}, {"HELLO", "3", "FOO"},
		{"HELLO", "3", "AUTH", "default"}, {"HELLO", "2", "SETNAME"}, {"HELLO", "3", "SETNAME", "a b"},
		{"HELLO", "3", "AUTH", "bob", "x"},
		{"AUTH", "x"}, {"AUTH", "default", "x"}, {"AUTH", "DEFAULT", "x"}, {"AUTH", "bob", "x"}, {"AUTH", "a", "b", "c"},
		{"CLIENT", "GETNAME"}, {"CLIENT", "SETNAME", "a b"}, {"CLIENT", "SETNAME", "n"}, {"CLIENT", "GETNAME"},
		{"CLIENT", "SETNAME", ""}, {"CLIENT", "GETNAME"},
		// Keys, with the same two keys on both sides.
		{"EXISTS", "k", "k", "k2", "nope"}, {"DBSIZE"}, {"DEL", "nope"}, {"UNLINK", "nope", "nope"},
		{"TYPE", "nope"}, {"KEYS", "nomatch*"}, {"TTL", "k"}, {"PTTL", "k"}, {"TTL", "nope"}, {"PTTL", "nope"},
		{"EXPIRETIME", "k"}, {"PEXPIRETIME", "nope"}, {"PERSIST", "k"}, {"PERSIST", "nope"},
		{"EXPIRE", "nope", "100"}, {"EXPIRE", "k", "100", "XX"}, {"EXPIRE", "k", "100", "GT"},
		{"EXPIRE", "k", "100", "LT"}, {"TTL", "k"}, {"EXPIRE", "k", "100", "NX"}, {"EXPIRE", "k", "200", "GT"},
		{"EXPIRE", "k", "150", "gt"}, {"EXPIRE", "k", "50", "lt", "xx"}, {"TTL", "k"}, {"PERSIST", "k"}, {"TTL", "k"},
		{"EXPIRE", "k", "10", "NX", "XX"}, {"EXPIRE", "k", "10", "GT", "LT"}, {"PEXPIRE", "k", "10", "LT", "NX"},
		{"EXPIRE", "k", "10", "FOO"}, {"EXPIRE", "k", "10", "NX", "bar"}, {"EXPIRE", "k", "abc"},
		{"EXPIRE", "k", "1.5"}, {"EXPIRE", "k", ""}, {"EXPIRE", "k", "9223372036854775807"},
		{"EXPIRE", "nope", "9223372036854775807"}, {"PEXPIRE", "k", "9223372036854775807"},
		{"EXPIREAT", "k", "9223372036854775807"}, {"EXPIRE", "k", "-9223372036854775808"},
		{"PEXPIREAT", "k", "9223372036854775807"}, {"PERSIST", "k"},
		{"EXPIRE", "nope", "-9223372036854775"}, {"PEXPIRE", "nope", "-9223372036854775808"},
		{"PEXPIRE", "k2", "-9223372036854775808"}, {"EXISTS", "k2"}, {"DBSIZE"},
		{"RENAME", "nope", "x"}, {"RENAME", "k", "k3"}, {"EXISTS", "k", "k3"}, {"RENAME", "k3", "k3"},
		{"RENAME", "k3", "k"}, {"TTL", "k"},
		{"SCAN", "abc"}, {"SCAN", " 1"}, {"SCAN", "1 "}, {"SCAN", "18446744073709551616"}, {"SCAN", "-1", "MATCH", "nomatch*"},
		{"SCAN", "18446744073709551615", "MATCH", "nomatch*"}, {"SCAN", "+0", "MATCH", "nomatch*"}, {"SCAN", "", "MATCH", "nomatch*"},
		{"SCAN", "0", "COUNT", "0"}, {"SCAN", "0", "COUNT", "-1"}, {"SCAN", "0", "COUNT", "abc"},
		{"SCAN", "0", "MATCH"}, {"SCAN", "0", "FOO", "bar"}, {"SCAN", "0", "TYPE"}, {"SCAN", "0", "match", "x", "count"},
		{"SCAN", "0", "TYPE", "nosuchtype", "COUNT", "1000"},
		// Server commands.
		{"CONFIG", "GET", "nosuch"}, {"CONFIG", "GET", "databases"}, {"CONFIG", "GET", "maxmemory-policy"},
		{"COMMAND", "INFO", "nosuch"}, {"COMMAND", "DOCS", "nosuch"}, {"INFO", "nosuchsection"},
		{"FLUSHDB", "ASYNC"}, {"DBSIZE"}, {"FLUSHALL", "SYNC"}, {"KEYS", "*"},
		{"QUIT"},
	})
	for _, c := range []*rawConn{ours, theirs} {
		if rest := c.expectClosed(); rest != "" {
			t.Errorf("after QUIT: read %q, want the connection closed", rest)
		}
	}
}

// TestBehaviourMatchesRedisInline compares inline commands and protocol
// errors, each on fresh connections: the replies up to the close.
func TestBehaviourMatchesRedisInline(t *testing.T) {
	_, addr := startServer(t, Config{})
	red := redistest.Start(t, "--databases", "1")
	sameStreamAsRedis(t, addr, red.Addr(), []string{
		"PING\r\n",
		"ECHO \"a b\\x41\"\r\nECHO 'it''s'\r\n",
		"\r\n \r\nPING\r\n",
		"ECHO \"unbalanced\r\n",
		"*1\r\n$-5\r\n",
		"*2\r\n$4\r\nECHO\r\n+hi\r\n",
		"*-1\r\n*0\r\nPING\r\n",
		"*abc\r\n",
		"*3000000000\r\n",
		"*1\r\n$4\r\nPING\r\n*1\r\n$999999999999\r\n",
		"nosuch a b\r\nQUIT\r\n",
	})
}

// sameStreamAsRedis sends each input, as it is, on a fresh connection to
// each server, ends the input, and compares all they answer before
// closing.
func sameStreamAsRedis(t *testing.T, addr, redisAddr string, inputs []string) {
	t.Helper()
	for _, in := range inputs {
		ours, theirs := dialRaw(t, addr), dialRaw(t, redisAddr)
		ours.send(in)
		theirs.send(in)
		closeWrite(t, ours)
		closeWrite(t, theirs)
		if got, want := ours.expectClosed(), theirs.expectClosed(); got != want {
			t.Errorf("%q: got %q, redis-server answers %q", in, got, want)
		}
	}
}

// closeWrite ends what the client sends, so the server sees the end of
// its input and closes after its replies.
func closeWrite(t *testing.T, r *rawConn) {
	t.Helper()
	if tc, ok := r.nc.(interface{ CloseWrite() error }); ok {
		if err := tc.CloseWrite(); err != nil {
			t.Fatalf("CloseWrite: %v", err)
		}
	}
}
