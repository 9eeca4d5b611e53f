package server

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Rows for arity and unknown commands, the connection commands (PING,
// ECHO, SELECT, QUIT, HELLO, AUTH, CLIENT) and the server commands
// (COMMAND, INFO, CONFIG, LASTSAVE, SAVE, BGSAVE, SHUTDOWN).

func arityRows() []behaviourRow {
	return []behaviourRow{
		{"arity/bf", func(b *bt) {
			k := b.key("f")
			for _, args := range [][]any{
				{"BF.RESERVE", k, "0.01"}, {"BF.RESERVE", k}, {"Bf.Add", k}, {"BF.ADD", k, "a", "b"},
				{"BF.MADD", k}, {"BF.INSERT", k, "ITEMS"}, {"BF.EXISTS", k}, {"BF.EXISTS", k, "a", "b"},
				{"BF.MEXISTS", k}, {"BF.INFO"}, {"BF.INFO", k, "CAPACITY", "x"}, {"BF.CARD"}, {"BF.CARD", k, "x"},
				{"BF.SCANDUMP", k}, {"BF.SCANDUMP", k, "0", "x"}, {"BF.LOADCHUNK", k, "1"}, {"BF.LOADCHUNK", k, "1", "d", "e"},
			} {
				b.do(errReply(arityErr(strings.ToLower(args[0].(string)))), args...)
			}
			b.do(0, "EXISTS", k)
		}},
		{"arity/generic", func(b *bt) {
			for _, c := range []struct {
				name string
				args []any
			}{
				{"exists", []any{"EXISTS"}}, {"del", []any{"DEL"}}, {"unlink", []any{"UNLINK"}},
				{"type", []any{"TYPE"}}, {"type", []any{"TYPE", "a", "b"}}, {"keys", []any{"KEYS"}},
				{"scan", []any{"SCAN"}}, {"rename", []any{"RENAME", "a"}}, {"expire", []any{"EXPIRE", "a"}},
				{"pexpireat", []any{"PEXPIREAT", "a"}}, {"ttl", []any{"TTL"}}, {"pttl", []any{"PTTL", "a", "b"}},
				{"persist", []any{"PERSIST"}}, {"dbsize", []any{"DBSIZE", "x"}}, {"ping", []any{"PING", "a", "b"}},
				{"echo", []any{"ECHO"}}, {"select", []any{"SELECT"}}, {"auth", []any{"AUTH"}},
				{"client", []any{"CLIENT"}}, {"config", []any{"CONFIG"}}, {"client|setname", []any{"CLIENT", "SETNAME"}},
				{"client|getname", []any{"client", "getname", "x"}}, {"config|get", []any{"CONFIG", "GET"}},
				{"command|count", []any{"COMMAND", "COUNT", "x"}}, {"lastsave", []any{"LASTSAVE", "x"}},
				{"save", []any{"SAVE", "x"}},
			} {
				b.do(errReply(arityErr(c.name)), c.args...)
			}
		}},
		{"unknown-command", func(b *bt) {
			b.do(errReply("ERR unknown command 'foo', with args beginning with: 'a' 'b' "), "foo", "a", "b")
			b.do(errReply("ERR unknown command 'FOO', with args beginning with: "), "FOO")
			b.do(errReply("ERR unknown command 'no-such', with args beginning with: 'a b' 'c\x00' "), "no-such", "a b", "c\x00")
			for _, c := range []struct{ cmd, arg, parent string }{{"CLIENT", "FOO", "CLIENT"}, {"config", "foo", "CONFIG"}, {"Command", "x", "COMMAND"}} {
				b.do(errReply("ERR unknown subcommand '"+c.arg+"'. Try "+c.parent+" HELP."), c.cmd, c.arg)
			}
		}},
	}
}

func connRows() []behaviourRow {
	return []behaviourRow{
		{"conn/ping-echo-select", func(b *bt) {
			b.do("PONG", "PING")
			b.do("hi there", "PING", "hi there")
			b.do("a\r\nb\x00", "ECHO", "a\r\nb\x00")
			b.do("", "ECHO", "")
			b.do("OK", "SELECT", "0")
			b.do(errReply("ERR DB index is out of range"), "SELECT", "1")
			b.do(errReply("ERR value is not an integer or out of range"), "SELECT", "abc")
		}},
		{"conn/quit", func(b *bt) {
			r := b.raw()
			r.send(encodeCommand("QUIT") + encodeCommand("PING"))
			if got := r.expectClosed(); got != rawStatus("OK") {
				b.Errorf("QUIT then PING: got %q, want +OK and the connection closed", got)
			}
		}},
		{"conn/hello", func(b *bt) {
			k := b.key("f")
			r := dialRaw(b, b.c.Options().Addr)
			r.do("BF.ADD", k, "a")
			got := r.do("HELLO", "3", "SETNAME", "hello-name")
			for _, part := range []string{"%7\r\n", "$5\r\nproto\r\n:3\r\n", "$6\r\nserver\r\n$5\r\nredis\r\n", "$4\r\nmode\r\n$10\r\nstandalone\r\n"} {
				if !strings.Contains(got, part) {
					b.Errorf("HELLO 3: reply %q lacks %q", got, part)
				}
			}
			want3 := []struct{ args []string }{{[]string{"BF.ADD", k, "a"}}, {[]string{"BF.EXISTS", k, "b"}}}
			for i, want := range []string{"#f\r\n", "#f\r\n"} {
				if got := r.do(want3[i].args...); got != want {
					b.Errorf("RESP3 %v: got %q, want %q", want3[i].args, got, want)
				}
			}
			if got := r.do("BF.MADD", k, "a", "c"); got != "*2\r\n#f\r\n#t\r\n" {
				b.Errorf("RESP3 BF.MADD: got %q", got)
			}
			if got := r.do("BF.INFO", k); !strings.HasPrefix(got, "%5\r\n+Capacity\r\n:100\r\n+Size\r\n:") ||
				!strings.HasSuffix(got, "+Number of filters\r\n:1\r\n+Number of items inserted\r\n:2\r\n+Expansion rate\r\n:2\r\n") {
				b.Errorf("RESP3 BF.INFO: got %q, want a map of the five fields", got)
			}
			if got := r.do("BF.INFO", k, "ITEMS"); got != "%1\r\n+Number of items inserted\r\n:2\r\n" {
				b.Errorf("RESP3 BF.INFO ITEMS: got %q, want a one-entry map", got)
			}
			if got := r.do("CLIENT", "GETNAME"); got != rawBulk("hello-name") {
				b.Errorf("CLIENT GETNAME after HELLO SETNAME: got %q", got)
			}
			if got := r.do("HELLO", "2"); !strings.HasPrefix(got, "*14\r\n") || !strings.Contains(got, "$5\r\nproto\r\n:2\r\n") {
				b.Errorf("HELLO 2: got %q, want a flat array with proto 2", got)
			}
			if got := r.do("BF.EXISTS", k, "a"); got != rawInt(1) {
				b.Errorf("RESP2 BF.EXISTS after HELLO 2: got %q", got)
			}
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"HELLO", "4"}, "NOPROTO unsupported protocol version"},
				{[]string{"HELLO", "1"}, "NOPROTO unsupported protocol version"},
				{[]string{"HELLO", "abc"}, "ERR Protocol version is not an integer or out of range"},
				{[]string{"HELLO", "3", "FOO"}, "ERR Syntax error in HELLO option 'FOO'"},
				{[]string{"HELLO", "3", "SETNAME"}, "ERR Syntax error in HELLO option 'SETNAME'"},
				{[]string{"HELLO", "3", "AUTH", "default"}, "ERR Syntax error in HELLO option 'AUTH'"},
				{[]string{"HELLO", "3", "SETNAME", "a b"}, "ERR Client names cannot contain spaces, newlines or special characters."},
			} {
				if got := r.do(c.args...); got != rawErr(c.want) {
					b.Errorf("%v: got %q, want %q", c.args, got, rawErr(c.want))
				}
			}
			// A failed HELLO changes nothing: still RESP2.
			if got := r.do("BF.EXISTS", k, "zzz"); got != rawInt(0) {
				b.Errorf("RESP2 BF.EXISTS after failed HELLOs: got %q", got)
			}
		}},
		{"conn/auth-without-password", func(b *bt) {
			b.do(errReply(errNoPass), "AUTH", "x")
			b.do("OK", "AUTH", "default", "anything") // the default user has no password
			b.do(errReply(errWrongPass), "AUTH", "bob", "x")
			b.do(errReply(errWrongPass), "AUTH", "DEFAULT", "x") // user names are case-sensitive
			b.do(errReply("ERR syntax error"), "AUTH", "a", "b", "c")
			b.do("PONG", "PING")
		}},
		{"conn/client", func(b *bt) {
			b.sticky()
			b.do(null{}, "CLIENT", "GETNAME")
			b.do("OK", "CLIENT", "SETNAME", "row-client")
			b.do("row-client", "client", "getname")
			b.do(errReply("ERR Client names cannot contain spaces, newlines or special characters."), "CLIENT", "SETNAME", "a b")
			b.do("row-client", "CLIENT", "GETNAME")
			id := b.do(positive, "CLIENT", "ID")
			other := b.c.Conn()
			defer other.Close()
			if oid, err := other.ClientID(b.ctx).Result(); err != nil || oid == id {
				b.Errorf("CLIENT ID on another connection: %v, %v; want an id other than %v", oid, err, id)
			}
			info := b.do(anyOK{}, "CLIENT", "INFO").(string)
			for _, part := range []string{fmt.Sprintf("id=%d ", id), "name=row-client ", "lib-name=go-redis"} {
				if !strings.Contains(info, part) {
					b.Errorf("CLIENT INFO %q lacks %q", info, part)
				}
			}
			b.do("OK", "CLIENT", "SETINFO", "LIB-NAME", "mylib")
			b.do("OK", "CLIENT", "SETINFO", "lib-ver", "1.2.3")
			if info := b.do(anyOK{}, "CLIENT", "INFO").(string); !strings.Contains(info, "lib-name=mylib lib-ver=1.2.3") {
				b.Errorf("CLIENT INFO after SETINFO: %q", info)
			}
			b.do(errReply("ERR Unrecognized option 'foo'"), "CLIENT", "SETINFO", "foo", "bar")
			b.do(errReply("ERR lib-name cannot contain spaces, newlines or special characters."), "CLIENT", "SETINFO", "lib-name", "a b")
			b.do("OK", "CLIENT", "SETNAME", "")
			b.do(null{}, "CLIENT", "GETNAME")
		}},
	}
}

func serverRows() []behaviourRow {
	return []behaviourRow{
		{"server/command", func(b *bt) {
			n := b.do(positive, "COMMAND", "COUNT").(int64)
			all := b.do(anyOK{}, "COMMAND").([]any)
			if int64(len(all)) != n {
				b.Errorf("COMMAND lists %d commands, COMMAND COUNT says %d", len(all), n)
			}
			b.do(check(func(v any, err error) string {
				arr, ok := v.([]any)
				if err != nil || !ok || int64(len(arr)) != n {
					return fmt.Sprintf("got %d entries, %v; want all %d commands", len(arr), err, n)
				}
				return ""
			}), "COMMAND", "INFO")
			info := b.do(anyOK{}, "COMMAND", "INFO", "bf.add", "nosuch", "PING").([]any)
			if len(info) != 3 || info[1] != nil {
				b.Fatalf("COMMAND INFO bf.add nosuch PING: got %#v", info)
			}
			for i, want := range []struct {
				name  string
				arity int64
				keys  []any
			}{{"bf.add", 3, []any{int64(1), int64(1), int64(1)}}, {}, {"ping", -1, []any{int64(0), int64(0), int64(0)}}} {
				if i == 1 {
					continue
				}
				e, ok := info[i].([]any)
				if !ok || len(e) != 10 || e[0] != want.name || e[1] != want.arity || !slices.Equal(e[3:6], want.keys) {
					b.Errorf("COMMAND INFO entry %d: got %#v, want %s of arity %d, keys %v", i, info[i], want.name, want.arity, want.keys)
				}
			}
			names, msg := sortedStrings(b.do(anyOK{}, "COMMAND", "LIST"))
			if msg != "" || int64(len(names)) != n {
				b.Errorf("COMMAND LIST: %d names (%s), want %d", len(names), msg, n)
			}
			for _, name := range []string{"bf.add", "bf.reserve", "bf.loadchunk", "ping", "scan", "client", "hello"} {
				if _, found := slices.BinarySearch(names, name); !found {
					b.Errorf("COMMAND LIST lacks %s", name)
				}
			}
			b.do(check(func(v any, err error) string {
				if arr, ok := v.([]any); ok && len(arr) == 0 && err == nil {
					return ""
				}
				if m, ok := v.(map[any]any); ok && len(m) == 0 && err == nil {
					return ""
				}
				return fmt.Sprintf("got %#v, %v; want no documentation", v, err)
			}), "COMMAND", "DOCS", "bf.add")
		}},
		{"server/info", func(b *bt) {
			b.do(flag(true), "BF.ADD", b.key("f"), "x")
			text := b.do(anyOK{}, "INFO").(string)
			for _, part := range []string{"# Server\r\n", "redis_version:", "# Clients\r\nconnected_clients:", "# Memory\r\n",
				"# Persistence\r\nloading:0\r\n", "# Stats\r\n", "total_commands_processed:", "# Keyspace\r\ndb0:keys="} {
				if !strings.Contains(text, part) {
					b.Errorf("INFO lacks %q", part)
				}
			}
			for _, sel := range [][]any{{"INFO", "all"}, {"INFO", "default"}, {"INFO", "everything"}} {
				if got := b.do(anyOK{}, sel...).(string); !strings.Contains(got, "# Server\r\n") || !strings.Contains(got, "# Keyspace\r\n") {
					b.Errorf("%v: want every section, got %q", sel, got)
				}
			}
			server := b.do(anyOK{}, "INFO", "server").(string)
			if !strings.HasPrefix(server, "# Server\r\n") || strings.Contains(server, "# Clients") {
				b.Errorf("INFO server: got %q, want the server section alone", server)
			}
			two := b.do(anyOK{}, "INFO", "MEMORY", "keyspace").(string)
			if !strings.HasPrefix(two, "# Memory\r\n") || !strings.Contains(two, "# Keyspace\r\ndb0:") || strings.Contains(two, "# Server") {
				b.Errorf("INFO MEMORY keyspace: got %q", two)
			}
			b.do("", "INFO", "nosuchsection")
		}},
		{"server/config", func(b *bt) {
			b.do(pairs{"maxmemory", check(func(v any, err error) string {
				if s, ok := v.(string); !ok || s == "" || strings.Trim(s, "0123456789") != "" {
					return fmt.Sprintf("got %#v, want a number of bytes", v)
				}
				return ""
			})}, "CONFIG", "GET", "maxmemory")
			b.do(pairs{"bf-error-rate", "0.01", "bf-initial-size", "100", "bf-expansion-factor", "2"}, "CONFIG", "GET", "bf-*")
			b.do(pairs{"databases", "1", "maxmemory-policy", "noeviction"}, "config", "get", "DATABASES", "maxmemory-p*")
			b.do(pairs{}, "CONFIG", "GET", "nosuch")
			b.do(errReply("ERR CONFIG SET is not supported: restart bloomery serve with the new flags"), "CONFIG", "SET", "maxmemory", "1")
			b.do("OK", "CONFIG", "RESETSTAT")
		}},
		{"server/memory", func(b *bt) {
			b.do("OK", "MEMORY", "PURGE")
			b.do("OK", "BF.RESERVE", "{mem}k", 0.01, 1000)
			b.do(check(func(v any, err error) string {
				// the filter's bytes, its name, and some overhead
				if n, ok := v.(int64); !ok || n < 1000 || n > 4000 {
					return fmt.Sprintf("got %#v, %v; want about 1.3 KB", v, err)
				}
				return ""
			}), "MEMORY", "USAGE", "{mem}k")
			b.do(null{}, "MEMORY", "USAGE", "{mem}missing")
			b.do(errReply("ERR syntax error"), "MEMORY", "USAGE", "{mem}k", "FOO")
			b.do(errReply("ERR unknown subcommand 'FOO'. Try MEMORY HELP."), "MEMORY", "FOO")
		}},
		{"server/lastsave-save", func(b *bt) {
			now := time.Now().Unix()
			b.do(within(now-7*86400, now+1), "LASTSAVE")
			saved := check(func(v any, err error) string {
				if err == nil || err.Error() == "ERR not supported by this backend" {
					return ""
				}
				return "got error " + err.Error() + ", want success or the not-supported error"
			})
			b.do(saved, "SAVE")
			b.do(saved, "BGSAVE")
			b.do(errReply("ERR syntax error"), "BGSAVE", "NOW")
			b.do(errReply("ERR syntax error"), "SHUTDOWN", "FOO")
			b.do("PONG", "PING")
		}},
	}
}
