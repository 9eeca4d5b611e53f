package server

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Behaviours that need a server configured otherwise than the table's:
// a password (compared with redis-server --requirepass) and memory limits.

const errNoMemoryText = "ERR Insufficient memory to create filter"

// argsFor returns a command line of cmd's arity (at least its minimum),
// filled with "x": what passes the arity check and reaches the
// authentication check.
func argsFor(words []string, arity int) []string {
	n := max(arity, -arity)
	for len(words) < n {
		words = append(words, "x")
	}
	return words
}

func TestBehaviourAuth(t *testing.T) {
	srv, addr := startServer(t, Config{RequirePass: "s3cret"})
	c := dialRaw(t, addr)
	checked := 0
	for _, cmd := range srv.cmds.sorted() {
		lines := [][]string{argsFor([]string{cmd.name}, cmd.arity)}
		if cmd.subs != nil {
			lines = lines[:0]
			for _, sub := range sortedSubs(cmd) {
				name := strings.SplitN(sub.name, "|", 2)
				lines = append(lines, argsFor(name, sub.arity))
			}
		}
		for _, args := range lines {
			want := rawErr("NOAUTH Authentication required.")
			switch args[0] {
			case "auth":
				want = rawErr(errWrongPass)
			case "hello":
				want = rawErr("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
			case "quit":
				continue
			}
			if got := c.do(args...); got != want {
				t.Errorf("unauthenticated %q: got %q, want %q", args, got, want)
			}
			checked++
		}
	}
	if checked < 40 {
		t.Errorf("checked %d commands, want every command of the table", checked)
	}

	// redistest waits for an unauthenticated PING: set the password after.
	red := redistest.Start(t, "--databases", "1")
	if got := dialRaw(t, red.Addr()).do("CONFIG", "SET", "requirepass", "s3cret"); got != rawStatus("OK") {
		t.Fatalf("redis-server CONFIG SET requirepass: %q", got)
	}
	ours, theirs := dialRaw(t, addr), dialRaw(t, red.Addr())
	sameAsRedis(t, ours, theirs, [][]string{
		{"PING"}, {"PING", "a", "b"}, {"nosuch", "a"}, {"EXISTS"}, {"CLIENT", "FOO"}, {"CLIENT", "SETNAME", "x"},
		{"SELECT", "0"}, {"INFO"}, {"COMMAND"}, {"KEYS", "*"}, {"SCAN", "0"}, {"FLUSHALL"}, {"CONFIG", "GET", "x"},
		{"DBSIZE"}, {"ECHO", "a"},
		{"AUTH", "wrong"}, {"AUTH", "default", "wrong"}, {"AUTH", "DEFAULT", "s3cret"}, {"AUTH", "a", "b", "c"},
		{"HELLO", "3", "AUTH", "default", "wrong"}, {"HELLO", "abc"}, {"HELLO", "4"}, {"PING"},
		{"AUTH", "s3cret"}, {"PING"}, {"DBSIZE"}, {"AUTH", "default", "s3cret"}, {"AUTH", "wrong"}, {"PING"},
		{"CLIENT", "GETNAME"}, {"AUTH", "x"},
	})
	// HELLO without AUTH before authenticating: Redis 7.2's reply and
	// semantics (the options take effect only once authenticated), where
	// 7.0 omitted "<proto>" and kept a SETNAME given to a refused HELLO.
	noauthHello := rawErr("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
	hc := dialRaw(t, addr)
	for _, args := range [][]string{{"HELLO"}, {"HELLO", "3"}, {"HELLO", "2", "SETNAME", "n"}} {
		if got := hc.do(args...); got != noauthHello {
			t.Errorf("unauthenticated %q: got %q, want %q", args, got, noauthHello)
		}
	}
	for _, c := range [][2]string{{"AUTH s3cret", rawStatus("OK")}, {"CLIENT GETNAME", "$-1\r\n"}, {"PING", rawStatus("PONG")}} {
		if got := hc.do(strings.Fields(c[0])...); got != c[1] {
			t.Errorf("%s after refused HELLOs: got %q, want %q (still RESP2, no name)", c[0], got, c[1])
		}
	}
	// Before AUTH, Redis's tighter protocol limits apply.
	sameStreamAsRedis(t, addr, red.Addr(), []string{"*11\r\n", "*2\r\n$16385\r\n", "*1\r\n$4\r\nPING\r\n",
		"*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n*11\r\n"})

	// HELLO AUTH authenticates and switches protocol in one command.
	h := dialRaw(t, addr)
	if got := h.do("HELLO", "3", "AUTH", "default", "s3cret"); !strings.HasPrefix(got, "%7\r\n") {
		t.Errorf("HELLO 3 AUTH default s3cret: got %q, want the RESP3 map", got)
	}
	if got := h.do("BF.ADD", "k", "a"); got != "#t\r\n" {
		t.Errorf("BF.ADD after HELLO 3 AUTH: got %q, want #t", got)
	}

	// Clients: with the password they work, without it they are refused.
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		good := newClient(t, addr, proto, func(o *redis.Options) { o.Password = "s3cret" })
		if added, err := good.BFAdd(ctx, "k"+strconv.Itoa(proto), "a").Result(); err != nil || !added {
			t.Errorf("RESP%d client with the password: BFAdd = %v, %v", proto, added, err)
		}
		bad := newClient(t, addr, proto)
		if err := bad.BFAdd(ctx, "k", "a").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
			t.Errorf("RESP%d client without the password: BFAdd error %v, want NOAUTH", proto, err)
		}
		wrong := newClient(t, addr, proto, func(o *redis.Options) { o.Password = "nope" })
		if err := wrong.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
			t.Errorf("RESP%d client with a wrong password: PING error %v, want WRONGPASS", proto, err)
		}
	}
}

// fillUntil adds batches of new items to key with BF.MADD until a batch
// ends with an error element, and returns that error's text and the
// items answered before it.
func fillUntil(t *testing.T, c *redis.Client, key string) (string, int) {
	t.Helper()
	ctx := context.Background()
	answered := 0
	for batch := 0; batch < 1000; batch++ {
		args := append([]any{"BF.MADD", key}, items("i"+strconv.Itoa(batch)+"-", 1000)...)
		v, err := c.Do(ctx, args...).Result()
		if err != nil {
			return err.Error(), answered
		}
		arr := v.([]any)
		for i, e := range arr {
			if e, ok := e.(error); ok {
				if i != len(arr)-1 {
					t.Fatalf("BF.MADD: an error element at %d of %d; want processing to stop there", i, len(arr))
				}
				return e.Error(), answered
			}
			answered++
		}
	}
	t.Fatalf("%s: a million items and no error", key)
	return "", 0
}

func TestBehaviourMaxMemory(t *testing.T) {
	const limit = 64 << 10
	_, addr := startServer(t, Config{MaxMemory: limit})
	c := newClient(t, addr, 2)
	ctx := context.Background()
	b := &bt{T: t, c: c, d: c, ctx: ctx, row: "maxmemory"}

	b.do(errReply(errNoMemoryText), "BF.RESERVE", "big", "0.001", "1000000")
	// A filter that cannot be created is the whole reply, not an element.
	b.do(errReply(errNoMemoryText), "BF.INSERT", "big", "CAPACITY", "1000000", "ITEMS", "a")
	b.do(0, "EXISTS", "big")

	b.do("OK", "BF.RESERVE", "g", "0.01", "1000")
	msg, n := fillUntil(t, c, "g")
	if msg != errNoMemoryText {
		t.Fatalf("growth past maxmemory: error %q, want %q", msg, errNoMemoryText)
	}
	if n < 10000 {
		t.Errorf("only %d items before the 64 KiB budget ran out", n)
	}
	b.do(errReply(errNoMemoryText), "BF.ADD", "g", "one more")
	b.do(flag(false), "BF.ADD", "g", "i0-0") // present items still answer 0
	b.do(flag(true), "BF.EXISTS", "g", "i0-999")
	b.do("PONG", "PING")
	info := b.do(anyOK{}, "INFO", "memory").(string)
	used := fieldOf(info, "filter_bytes")
	if v, err := strconv.ParseUint(used, 10, 64); err != nil || v > limit || v < limit/4 {
		t.Errorf("INFO filter_bytes = %q; want at most the 64 KiB limit and much of it used", used)
	}
	// What is left serves small filters, not larger ones.
	b.do(flag(true), "BF.ADD", "small", "a")
	b.do(errReply(errNoMemoryText), "BF.RESERVE", "other", "0.01", "40000")
	// A dump of a filter too large for the budget cannot be loaded.
	_, freeAddr := startServer(t, Config{})
	free := newClient(t, freeAddr, 2)
	if err := free.BFReserve(ctx, "huge", 0.001, 100000).Err(); err != nil {
		t.Fatal(err)
	}
	hdr, err := free.BFScanDump(ctx, "huge", 0).Result()
	if err != nil {
		t.Fatal(err)
	}
	b.do(errReply(errNoMemoryText), "BF.LOADCHUNK", "huge", hdr.Iter, hdr.Data)
	b.do(0, "EXISTS", "huge")
	// Deleting frees the budget.
	b.do(1, "DEL", "g")
	b.do("OK", "BF.RESERVE", "other", "0.01", "40000")
}

func TestBehaviourMaxFilterBytes(t *testing.T) {
	_, addr := startServer(t, Config{MaxFilterBytes: 16 << 10})
	c := newClient(t, addr, 3)
	b := &bt{T: t, c: c, d: c, ctx: context.Background(), resp3: true, row: "maxfilter"}
	b.do(errReply(errNoMemoryText), "BF.RESERVE", "big", "0.001", "100000")
	// The limit is per filter: several filters each grow up to it.
	for _, k := range []string{"a", "b", "c"} {
		b.do("OK", "BF.RESERVE", k, "0.01", "500")
		if msg, n := fillUntil(t, c, k); msg != errNoMemoryText || n < 5000 {
			t.Errorf("%s: error %q after %d items; want %q after thousands", k, msg, n, errNoMemoryText)
		}
		b.do(flag(false), "BF.ADD", k, "i0-1")
	}
	b.do("PONG", "PING")
	var e redis.Error
	if err := c.Do(b.ctx, "BF.ADD", "a", "new").Err(); !errors.As(err, &e) || err.Error() != errNoMemoryText {
		t.Errorf("BF.ADD to a filter at its limit: %v", err)
	}
}

// fieldOf returns the value of name in INFO's text.
func fieldOf(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}
