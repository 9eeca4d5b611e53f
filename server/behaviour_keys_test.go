package server

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Rows for the generic key commands, as redis-server 7.0 answers them.

// sortedStrings reads an array of strings and sorts it.
func sortedStrings(v any) ([]string, string) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Sprintf("got %#v, want an array", v)
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Sprintf("element %d is %#v, want a string", i, e)
		}
		out[i] = s
	}
	slices.Sort(out)
	return out, ""
}

// keysAre expects an array holding exactly want, in any order.
func keysAre(want ...string) check {
	return func(v any, err error) string {
		if err != nil {
			return err.Error()
		}
		got, msg := sortedStrings(v)
		if msg != "" {
			return msg
		}
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			return fmt.Sprintf("got keys %q, want %q", got, w)
		}
		return ""
	}
}

// scanAll runs a whole SCAN with opts and returns how often each key came
// back and the number of calls.
func (b *bt) scanAll(opts ...any) (map[string]int, int) {
	b.Helper()
	seen := map[string]int{}
	cursor := "0"
	for calls := 1; calls < 100000; calls++ {
		v := b.do(anyOK{}, append([]any{"SCAN", cursor}, opts...)...)
		arr, ok := v.([]any)
		if !ok || len(arr) != 2 {
			b.Fatalf("SCAN %s: got %#v, want [cursor, keys]", cursor, v)
		}
		cursor, ok = arr[0].(string)
		keys, msg := sortedStrings(arr[1])
		if !ok || msg != "" {
			b.Fatalf("SCAN: got %#v, want [cursor, keys]", v)
		}
		for _, k := range keys {
			seen[k]++
		}
		if cursor == "0" {
			return seen, calls
		}
	}
	b.Fatal("SCAN did not end")
	return nil, 0
}

func keyRows() []behaviourRow {
	return []behaviourRow{
		{"keys/exists-counts-duplicates", func(b *bt) {
			b.do(flag(true), "BF.ADD", b.key("a"), "x")
			b.do(flag(true), "BF.ADD", b.key("b"), "x")
			b.do(3, "EXISTS", b.key("a"), b.key("a"), b.key("b"), b.key("c"))
			b.do(0, "EXISTS", b.key("c"))
		}},
		{"keys/del-unlink", func(b *bt) {
			for _, k := range []string{"a", "b", "c"} {
				b.do(flag(true), "BF.ADD", b.key(k), "x")
			}
			b.do(1, "DEL", b.key("a"), b.key("nope"))
			b.do(2, "UNLINK", b.key("b"), b.key("b"), b.key("c"))
			b.do(0, "DEL", b.key("a"))
			b.do(0, "EXISTS", b.key("a"), b.key("b"), b.key("c"))
			b.do(flag(false), "BF.EXISTS", b.key("a"), "x")
		}},
		{"keys/type", func(b *bt) {
			b.do(flag(true), "BF.ADD", b.key("a"), "x")
			b.do("MBbloom--", "TYPE", b.key("a"))
			b.do("none", "TYPE", b.key("nope"))
		}},
		{"keys/keys-glob", func(b *bt) {
			b.do("OK", "FLUSHALL")
			for _, k := range []string{"user:1", "user:2", "user:10", "admin:1", "h?llo", "hallo", "hello", "a*b"} {
				b.do(flag(true), "BF.ADD", k, "x")
			}
			b.do(keysAre("user:1", "user:2", "user:10"), "KEYS", "user:*")
			b.do(keysAre("user:1", "user:2"), "KEYS", "user:?")
			b.do(keysAre("hallo", "hello"), "KEYS", "h[ae]llo")
			b.do(keysAre("h?llo"), "KEYS", `h\?llo`)
			b.do(keysAre("a*b"), "KEYS", `a\*b`)
			b.do(keysAre("admin:1", "h?llo", "hallo", "hello", "a*b"), "KEYS", "[^u]*")
			b.do(keysAre("user:1", "user:2", "user:10", "admin:1", "h?llo", "hallo", "hello", "a*b"), "KEYS", "*")
			b.do(keysAre(), "KEYS", "nomatch*")
		}},
		{"keys/scan", func(b *bt) {
			b.do("OK", "FLUSHALL")
			var all []any
			for i := range 200 {
				all = append(all, "k"+strconv.Itoa(i))
			}
			for _, k := range all {
				b.do(flag(true), "BF.ADD", k, "x")
			}
			seen, calls := b.scanAll("COUNT", "7")
			if len(seen) != 200 || calls < 2 {
				b.Errorf("SCAN COUNT 7 over 200 keys: %d distinct keys in %d calls; want 200 in several", len(seen), calls)
			}
			for _, k := range all {
				if seen[k.(string)] < 1 {
					b.Errorf("SCAN never returned %s", k)
				}
			}
			seen, _ = b.scanAll("MATCH", "k1?", "COUNT", "1000")
			if len(seen) != 10 || seen["k15"] == 0 {
				b.Errorf("SCAN MATCH k1?: %v; want k10…k19", seen)
			}
			if seen, _ = b.scanAll("TYPE", "MBbloom--"); len(seen) != 200 {
				b.Errorf("SCAN TYPE MBbloom--: %d keys, want 200", len(seen))
			}
			if seen, _ = b.scanAll("TYPE", "string", "MATCH", "*"); len(seen) != 0 {
				b.Errorf("SCAN TYPE string: %d keys, want none", len(seen))
			}
			b.do(errReply("ERR syntax error"), "SCAN", "0", "COUNT", "0")
			b.do(errReply("ERR syntax error"), "SCAN", "0", "MATCH")
			b.do(errReply("ERR syntax error"), "SCAN", "0", "FOO", "bar")
			b.do(errReply("ERR value is not an integer or out of range"), "SCAN", "0", "COUNT", "abc")
			b.do(errReply("ERR invalid cursor"), "SCAN", "abc")
			b.do(errReply("ERR invalid cursor"), "SCAN", " 1")
			b.do(errReply("ERR invalid cursor"), "SCAN", "18446744073709551616")
			// Redis reads the cursor with strtoul: a sign is allowed, and
			// "-1" is the largest cursor. Where a cursor the server never
			// gave leads is the server's business; it is no error.
			for _, cur := range []string{"-1", "18446744073709551615", "+3", ""} {
				b.do([]any{anyOK{}, anyOK{}}, "SCAN", cur, "COUNT", "1")
			}
		}},
		{"keys/dbsize-flush", func(b *bt) {
			b.do("OK", "FLUSHDB")
			b.do(0, "DBSIZE")
			fill := func() {
				for _, k := range []string{"a", "b", "c"} {
					b.do(flag(true), "BF.ADD", k, "x")
				}
				b.do(3, "DBSIZE")
			}
			for _, flush := range [][]any{{"FLUSHDB", "ASYNC"}, {"flushdb", "sync"}, {"FLUSHALL"}, {"FLUSHALL", "ASYNC"}} {
				fill()
				b.do("OK", flush...)
				b.do(0, "DBSIZE")
				b.do(keysAre(), "KEYS", "*")
			}
			b.do(errReply("ERR syntax error"), "FLUSHDB", "foo")
			b.do(errReply("ERR syntax error"), "FLUSHALL", "ASYNC", "x")
		}},
		{"keys/rename", func(b *bt) {
			a, c, d := b.key("a"), b.key("c"), b.key("d")
			b.madd(a, items("item", 50))
			b.do(1, "EXPIRE", a, "100")
			b.do("OK", "RENAME", a, c)
			b.do(0, "EXISTS", a)
			b.do(flag(true), "BF.EXISTS", c, "item7")
			b.do(check(ttlNear(100)), "TTL", c)
			b.do(errReply("ERR no such key"), "RENAME", a, c)
			b.do("OK", "RENAME", c, c)
			b.do(flag(true), "BF.EXISTS", c, "item7")
			// Onto an existing key: the old filter is replaced.
			b.do(flag(true), "BF.ADD", d, "old")
			card := b.do(anyOK{}, "BF.CARD", c)
			b.do("OK", "RENAME", c, d)
			b.do(card, "BF.CARD", d)
			b.do(flag(true), "BF.EXISTS", d, "item7")
			b.do(0, "EXISTS", c)
		}},
	}
}

// ttlNear accepts a TTL in seconds of want or want−1.
func ttlNear(want int64) func(v any, err error) string {
	return func(v any, err error) string {
		if n, ok := v.(int64); !ok || err != nil || n > want || n < want-1 {
			return fmt.Sprintf("got %#v, %v; want a TTL of about %d", v, err, want)
		}
		return ""
	}
}

// within accepts an integer in [lo, hi].
func within(lo, hi int64) check {
	return func(v any, err error) string {
		if n, ok := v.(int64); !ok || err != nil || n < lo || n > hi {
			return fmt.Sprintf("got %#v, %v; want an integer in [%d, %d]", v, err, lo, hi)
		}
		return ""
	}
}

func expireRows() []behaviourRow {
	return []behaviourRow{
		{"expire/ttl", func(b *bt) {
			k := b.key("k")
			b.do(flag(true), "BF.ADD", k, "x")
			b.do(-1, "TTL", k)
			b.do(-1, "PTTL", k)
			b.do(-1, "EXPIRETIME", k)
			b.do(-2, "TTL", b.key("nope"))
			b.do(-2, "PTTL", b.key("nope"))
			b.do(-2, "PEXPIRETIME", b.key("nope"))
			b.do(0, "EXPIRE", b.key("nope"), "100")
			now := time.Now()
			b.do(1, "EXPIRE", k, "100")
			b.do(check(ttlNear(100)), "TTL", k)
			b.do(within(98000, 100000), "PTTL", k)
			b.do(within(now.Unix()+99, now.Unix()+101), "EXPIRETIME", k)
			b.do(within(now.UnixMilli()+98000, now.UnixMilli()+101000), "PEXPIRETIME", k)
			b.do(1, "PEXPIRE", k, "5000")
			b.do(within(4000, 5000), "PTTL", k)
			b.do(check(ttlNear(5)), "TTL", k)
		}},
		{"expire/options", func(b *bt) {
			k := b.key("k")
			b.do(flag(true), "BF.ADD", k, "x")
			// No expiry yet: XX and GT refuse, LT (no expiry is infinite) and NX set.
			b.do(0, "EXPIRE", k, "100", "XX")
			b.do(0, "EXPIRE", k, "100", "GT")
			b.do(1, "EXPIRE", k, "100", "LT")
			b.do(1, "PERSIST", k)
			b.do(1, "EXPIRE", k, "100", "nx")
			b.do(0, "EXPIRE", k, "200", "NX")
			b.do(1, "EXPIRE", k, "200", "XX")
			b.do(check(ttlNear(200)), "TTL", k)
			b.do(0, "EXPIRE", k, "150", "GT")
			b.do(1, "EXPIRE", k, "300", "GT")
			b.do(0, "EXPIRE", k, "400", "LT")
			b.do(1, "EXPIRE", k, "50", "LT")
			b.do(1, "EXPIRE", k, "60", "XX", "GT")
			b.do(check(ttlNear(60)), "TTL", k)
			b.do(errReply("ERR NX and XX, GT or LT options at the same time are not compatible"), "EXPIRE", k, "10", "NX", "XX")
			b.do(errReply("ERR NX and XX, GT or LT options at the same time are not compatible"), "PEXPIRE", k, "10", "GT", "NX")
			b.do(errReply("ERR GT and LT options at the same time are not compatible"), "EXPIRE", k, "10", "GT", "LT")
			b.do(errReply("ERR Unsupported option FOO"), "EXPIRE", k, "10", "FOO")
			b.do(errReply("ERR value is not an integer or out of range"), "EXPIRE", k, "abc")
			b.do(errReply("ERR value is not an integer or out of range"), "EXPIRE", k, "1.5")
			b.do(errReply("ERR invalid expire time in 'expire' command"), "EXPIRE", k, "9223372036854775807")
			b.do(errReply("ERR invalid expire time in 'pexpire' command"), "PEXPIRE", k, "9223372036854775807")
			b.do(errReply("ERR invalid expire time in 'expireat' command"), "EXPIREAT", k, "9223372036854775807")
			b.do(check(ttlNear(60)), "TTL", k)
		}},
		{"expire/at-and-past", func(b *bt) {
			k := b.key("k")
			b.do(flag(true), "BF.ADD", k, "x")
			now := time.Now()
			b.do(1, "EXPIREAT", k, strconv.FormatInt(now.Unix()+100, 10))
			b.do(check(ttlNear(100)), "TTL", k)
			b.do(1, "PEXPIREAT", k, strconv.FormatInt(now.UnixMilli()+50000, 10))
			b.do(within(48000, 50000), "PTTL", k)
			// A time in the past deletes the key, and counts as done.
			b.do(1, "EXPIREAT", k, "1")
			b.do(0, "EXISTS", k)
			b.do(0, "EXPIRE", b.key("nope"), "-9223372036854775")
			for _, past := range [][]any{{"EXPIRE", k, "-1"}, {"PEXPIRE", k, "0"}, {"PEXPIREAT", k, "0"},
				{"PEXPIRE", k, "-9223372036854775808"}, {"EXPIRE", k, "-9223372036854775"}} {
				b.do(flag(true), "BF.ADD", k, "x")
				b.do(1, past...)
				b.do(0, "EXISTS", k)
				b.do(-2, "TTL", k)
			}
		}},
		{"expire/persist", func(b *bt) {
			k := b.key("k")
			b.do(0, "PERSIST", k)
			b.do(flag(true), "BF.ADD", k, "x")
			b.do(0, "PERSIST", k)
			b.do(1, "EXPIRE", k, "100")
			b.do(1, "PERSIST", k)
			b.do(-1, "TTL", k)
			b.do(0, "PERSIST", k)
		}},
		{"expire/enforced", func(b *bt) {
			b.do("OK", "FLUSHALL")
			b.do(flag(true), "BF.ADD", "k", "x")
			b.do(flag(true), "BF.ADD", "stays", "x")
			b.do(1, "PEXPIRE", "k", "50")
			b.eventually(3*time.Second, func() string {
				for _, c := range []struct {
					args []any
					want any
				}{
					{[]any{"EXISTS", "k"}, 0}, {[]any{"BF.EXISTS", "k", "x"}, flag(false)},
					{[]any{"BF.CARD", "k"}, 0}, {[]any{"DBSIZE"}, 1}, {[]any{"KEYS", "*"}, keysAre("stays")},
					{[]any{"TTL", "k"}, -2},
				} {
					v, err := b.d.Do(b.ctx, c.args...).Result()
					if msg := b.match(c.want, v, err); msg != "" {
						return fmt.Sprintf("%v: %s", c.args, msg)
					}
				}
				return ""
			})
			b.do(errReply("ERR not found"), "BF.INFO", "k")
			b.do(flag(true), "BF.ADD", "k", "x") // a new filter
			b.do(1, "BF.CARD", "k")
			b.do(-1, "TTL", "k")
		}},
	}
}
