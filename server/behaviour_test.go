package server

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The behaviour table: what a RedisBloom client sees from Redis with the
// RedisBloom module (docs/DESIGN.md §7), and what a Redis client sees from
// redis-server 7.0 for the generic commands, checked through go-redis.
// runBehaviourTable takes a client factory, so the same rows run against
// every backend: here the memory backend in RESP2 and RESP3; the Redis
// backend's tests pass rows it cannot support (SCANDUMP, RENAME, SAVE…)
// through skip, by name.

// behaviourRow is one behaviour; its name (group/case) is what skip sees.
type behaviourRow struct {
	name string
	run  func(b *bt)
}

// behaviourRows is the whole table, in order.
func behaviourRows() []behaviourRow {
	return slices.Concat(reserveRows(), addRows(), insertRows(), infoRows(), dumpRows(),
		arityRows(), keyRows(), expireRows(), connRows(), serverRows(), cuckooRows())
}

// runBehaviourTable runs every row not skipped, each as a subtest with a
// client of its own from newClient (whose Options().Protocol, 2 or 3,
// selects the expected reply forms). Rows use keys inside their own hash
// tag, except the keyspace rows (KEYS, SCAN, DBSIZE, FLUSH*, expiry),
// which flush the database first: do not share the server with other
// tests meanwhile. Run it on a server made with behaviourConfig's limits
// (the capacity-bound row would otherwise build a 1.5 GB filter).
func runBehaviourTable(t *testing.T, newClient func(t *testing.T) *redis.Client, skip func(row string) bool) {
	seen := map[string]bool{}
	for _, r := range behaviourRows() {
		if seen[r.name] {
			t.Fatalf("two rows named %s", r.name)
		}
		seen[r.name] = true
		if skip != nil && skip(r.name) {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			c := newClient(t)
			b := &bt{T: t, c: c, d: c, ctx: context.Background(), resp3: c.Options().Protocol != 2, row: r.name}
			r.run(b)
		})
	}
}

// behaviourConfig is the memory server the table runs on: a per-filter
// limit well below the largest filter BF.RESERVE accepts, so the
// capacity-bound row does not allocate 1.5 GB.
func behaviourConfig() Config { return Config{MaxFilterBytes: 256 << 20} }

func TestBehaviourMemoryRESP2(t *testing.T) {
	_, addr := startServer(t, behaviourConfig())
	runBehaviourTable(t, clientFactory(addr, 2), nil)
}

func TestBehaviourMemoryRESP3(t *testing.T) {
	_, addr := startServer(t, behaviourConfig())
	runBehaviourTable(t, clientFactory(addr, 3), nil)
}

// Expectation helpers shared by the BF rows.

// positive accepts an integer above zero.
var positive = check(func(v any, err error) string {
	if n, ok := v.(int64); !ok || n <= 0 || err != nil {
		return fmt.Sprintf("got %#v, %v; want a positive integer", v, err)
	}
	return ""
})

// infoPairs is BF.INFO's full reply; expansion is an int or null{}.
func infoPairs(capacity int, size any, filters, items int, expansion any) pairs {
	return pairs{"Capacity", capacity, "Size", size, "Number of filters", filters,
		"Number of items inserted", items, "Expansion rate", expansion}
}

// grown is the capacity and number of sub-filters of a scalable filter
// of first capacity c0 and the given expansion after n items counted as
// new: a sub-filter opens when an item arrives and the last one holds its
// capacity (RedisBloom's rule).
func grown(c0, expansion, n int) (capacity, filters int) {
	capacity, filters = c0, 1
	for last := c0; n > capacity; filters++ {
		last *= expansion
		capacity += last
	}
	return capacity, filters
}

// items returns n distinct item names with prefix.
func items(prefix string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// madd adds items in batches with BF.MADD and returns how many answered 1.
func (b *bt) madd(key string, its []any) int {
	b.Helper()
	ones := 0
	for len(its) > 0 {
		n := min(len(its), 500)
		for _, added := range b.flags(append([]any{"BF.MADD", key}, its[:n]...)...) {
			if added {
				ones++
			}
		}
		its = its[n:]
	}
	return ones
}

// info returns BF.INFO key's fields by name.
func (b *bt) info(key string) map[string]any {
	b.Helper()
	v, err := b.d.Do(b.ctx, "BF.INFO", key).Result()
	if err != nil {
		b.Fatalf("BF.INFO %s: %v", key, err)
	}
	return b.pairMap(v)
}

const (
	errRateRange     = "ERR error rate must be in the range (0.000000, 1.000000)"
	errCapacityRange = "ERR capacity must be in the range [1, 1073741824]"
	errExpandRange   = "ERR expansion must be in the range [0, 32768]"
	errNonScaling    = "Nonscaling filters cannot expand"
)

func reserveRows() []behaviourRow {
	return []behaviourRow{
		{"bf.reserve/ok", func(b *bt) {
			k := b.key("f")
			b.do("OK", "BF.RESERVE", k, "0.01", "100")
			b.do(infoPairs(100, positive, 1, 0, 2), "BF.INFO", k)
			b.do(flag(false), "BF.EXISTS", k, "a")
			b.do("OK", "bf.reserve", b.key("lower"), "1e-2", "5", "expansion", "3")
			b.do(infoPairs(5, positive, 1, 0, 3), "BF.INFO", b.key("lower"))
		}},
		{"bf.reserve/bad-error-rate", func(b *bt) {
			for _, r := range []string{"abc", "", "0.01x", "nan", " 0.01", "0.01 ", "0,01"} {
				b.do(errReply("ERR bad error rate"), "BF.RESERVE", b.key("f"), r, "100")
			}
			b.do(0, "EXISTS", b.key("f"))
		}},
		{"bf.reserve/error-rate-range", func(b *bt) {
			for _, r := range []string{"0", "1", "-0.5", "1.5", "inf", "-0"} {
				b.do(errReply(errRateRange), "BF.RESERVE", b.key("f"), r, "100")
			}
		}},
		{"bf.reserve/bad-capacity", func(b *bt) {
			for _, c := range []string{"1.5", "1e3", "abc", "", "+5", " 5", "05", "99999999999999999999"} {
				b.do(errReply("ERR bad capacity"), "BF.RESERVE", b.key("f"), "0.01", c)
			}
		}},
		{"bf.reserve/capacity-range", func(b *bt) {
			for _, c := range []string{"0", "-1", "1073741825", "9223372036854775807"} {
				b.do(errReply(errCapacityRange), "BF.RESERVE", b.key("f"), "0.01", c)
			}
			b.do("OK", "BF.RESERVE", b.key("one"), "0.01", "1")
			b.do(field{"Capacity", 1}, "BF.INFO", b.key("one"), "CAPACITY")
			// The largest capacity passes the argument checks; the server
			// may then lack the memory (1.5 GB at 1%).
			b.do(check(func(v any, err error) string {
				if v == "OK" || (err != nil && err.Error() == "ERR Insufficient memory to create filter") {
					return ""
				}
				return fmt.Sprintf("got %#v, %v; want OK or the memory error", v, err)
			}), "BF.RESERVE", b.key("max"), "0.01", "1073741824")
		}},
		{"bf.reserve/no-expansion", func(b *bt) {
			b.do(errReply("ERR no expansion"), "BF.RESERVE", b.key("f"), "0.01", "100", "EXPANSION")
			b.do(errReply("ERR no expansion"), "BF.RESERVE", b.key("f"), "0.01", "100", "NONSCALING", "expansion")
		}},
		{"bf.reserve/bad-expansion", func(b *bt) {
			for _, x := range []string{"abc", "1.5", "", "2x"} {
				b.do(errReply("ERR bad expansion"), "BF.RESERVE", b.key("f"), "0.01", "100", "EXPANSION", x)
			}
		}},
		{"bf.reserve/expansion-range", func(b *bt) {
			for _, x := range []string{"-1", "32769"} {
				b.do(errReply(errExpandRange), "BF.RESERVE", b.key("f"), "0.01", "100", "EXPANSION", x)
			}
			b.do("OK", "BF.RESERVE", b.key("max"), "0.01", "100", "EXPANSION", "32768")
			b.do(field{"Expansion rate", 32768}, "BF.INFO", b.key("max"), "EXPANSION")
			b.do("OK", "BF.RESERVE", b.key("one"), "0.01", "100", "EXPANSION", "1")
			b.do(field{"Expansion rate", 1}, "BF.INFO", b.key("one"), "EXPANSION")
		}},
		{"bf.reserve/nonscaling-cannot-expand", func(b *bt) {
			b.do(errReply(errNonScaling), "BF.RESERVE", b.key("f"), "0.01", "100", "NONSCALING", "EXPANSION", "2")
			b.do(errReply(errNonScaling), "BF.RESERVE", b.key("f"), "0.01", "100", "EXPANSION", "4", "nonscaling")
			b.do(0, "EXISTS", b.key("f"))
			b.do("OK", "BF.RESERVE", b.key("f"), "0.01", "100", "NONSCALING", "EXPANSION", "0")
			b.do(infoPairs(100, positive, 1, 0, null{}), "BF.INFO", b.key("f"))
		}},
		{"bf.reserve/expansion-zero-is-nonscaling", func(b *bt) {
			k := b.key("f")
			b.do("OK", "BF.RESERVE", k, "0.01", "2", "EXPANSION", "0")
			b.do(field{"Expansion rate", null{}}, "BF.INFO", k, "EXPANSION")
			b.do([]any{flag(true), flag(true), errReply("ERR non scaling filter is full")}, "BF.MADD", k, "a", "b", "c")
		}},
		{"bf.reserve/check-order", func(b *bt) {
			k := b.key("f")
			for _, c := range []struct {
				args []any
				want string
			}{
				{[]any{"abc", "1.5"}, "ERR bad error rate"},
				{[]any{"2", "1.5"}, errRateRange},
				{[]any{"0.01", "1.5", "EXPANSION"}, "ERR bad capacity"},
				{[]any{"0.01", "0", "EXPANSION"}, errCapacityRange},
				{[]any{"0.01", "100", "NONSCALING", "EXPANSION", "abc"}, "ERR bad expansion"},
				{[]any{"0.01", "100", "EXPANSION", "40000"}, errExpandRange},
				// NONSCALING refuses any expansion but 0 before its range.
				{[]any{"0.01", "100", "EXPANSION", "40000", "NONSCALING"}, errNonScaling},
				{[]any{"0.01", "100", "NONSCALING", "EXPANSION", "-1"}, errNonScaling},
			} {
				b.do(errReply(c.want), append([]any{"BF.RESERVE", k}, c.args...)...)
			}
			// The arguments are checked before the key.
			b.do("OK", "BF.RESERVE", k, "0.01", "100")
			b.do(errReply("ERR bad error rate"), "BF.RESERVE", k, "abc", "100")
			b.do(errReply(errNonScaling), "BF.RESERVE", k, "0.01", "100", "NONSCALING", "EXPANSION", "2")
			b.do(errReply("ERR item exists"), "BF.RESERVE", k, "0.01", "100")
		}},
		{"bf.reserve/item-exists", func(b *bt) {
			k := b.key("f")
			b.do(flag(true), "BF.ADD", k, "a")
			b.do(errReply("ERR item exists"), "BF.RESERVE", k, "0.001", "5000")
			b.do(infoPairs(100, positive, 1, 1, 2), "BF.INFO", k)
		}},
		{"bf.reserve/unknown-words-ignored", func(b *bt) {
			b.do("OK", "BF.RESERVE", b.key("a"), "0.01", "100", "FOO")
			b.do("OK", "BF.RESERVE", b.key("b"), "0.01", "100", "FOO", "BAR", "BAZ")
			b.do(infoPairs(100, positive, 1, 0, 2), "BF.INFO", b.key("b"))
			b.do(errReply(arityErr("bf.reserve")), "BF.RESERVE", b.key("c"), "0.01", "100", "a", "b", "c", "d")
		}},
		{"bf.reserve/error-rate-capped", func(b *bt) {
			size := map[string]any{}
			for _, r := range []string{"0.9", "0.5", "0.25", "0.1"} {
				b.do("OK", "BF.RESERVE", b.key(r), r, "1000")
				size[r] = b.info(b.key(r))["Size"]
			}
			if size["0.9"] != size["0.25"] || size["0.5"] != size["0.25"] {
				b.Errorf("sizes at rates 0.9, 0.5, 0.25: %v, %v, %v; want all equal (capped at 0.25)", size["0.9"], size["0.5"], size["0.25"])
			}
			if s1, s25 := size["0.1"].(int64), size["0.25"].(int64); s1 <= s25 {
				b.Errorf("size at 0.1 = %d, at 0.25 = %d; want the lower rate larger", s1, s25)
			}
			// The filter behaves as a 25% one: far fewer than 90% false
			// positives once full.
			k := b.key("0.9")
			b.madd(k, items("in", 1000))
			fp := 0
			for _, f := range b.flags(append([]any{"BF.MEXISTS", k}, items("out", 2000)...)...) {
				if f {
					fp++
				}
			}
			if fp > 2000*35/100 {
				b.Errorf("%d of 2000 absent items found in a filter reserved at 0.9: want the rate capped at 0.25", fp)
			}
		}},
	}
}
