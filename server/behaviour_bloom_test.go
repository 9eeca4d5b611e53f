package server

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Rows for BF.ADD, BF.MADD, BF.EXISTS, BF.MEXISTS, BF.CARD, BF.INSERT
// and BF.INFO.

const errFullText = "ERR non scaling filter is full"

func addRows() []behaviourRow {
	return []behaviourRow{
		{"bf.add/new-then-present", func(b *bt) {
			k := b.key("f")
			b.do(flag(true), "BF.ADD", k, "a")
			b.do(flag(false), "BF.ADD", k, "a")
			b.do(flag(true), "BF.EXISTS", k, "a")
			b.do(flag(false), "BF.EXISTS", k, "b")
			b.do(1, "BF.CARD", k)
		}},
		{"bf.add/creates-with-defaults", func(b *bt) {
			k := b.key("f")
			b.do(flag(true), "bf.add", k, "a")
			b.do(infoPairs(100, positive, 1, 1, 2), "BF.INFO", k)
			b.do("MBbloom--", "TYPE", k)
			b.do([]any{flag(true), flag(true)}, "BF.MADD", b.key("m"), "a", "b")
			b.do(infoPairs(100, positive, 1, 2, 2), "BF.INFO", b.key("m"))
		}},
		{"bf.add/binary-items", func(b *bt) {
			k := b.key("f")
			long := strings.Repeat("x", 100<<10)
			its := []any{"", "\x00\xff", "a\r\nb", "a", "a\x00", long}
			b.do([]any{flag(true), flag(true), flag(true), flag(true), flag(true), flag(true)}, append([]any{"BF.MADD", k}, its...)...)
			b.do([]any{flag(true), flag(true), flag(true), flag(true), flag(true), flag(true), flag(false)},
				append(append([]any{"BF.MEXISTS", k}, its...), "a\r\n")...)
			b.do(flag(false), "BF.ADD", k, long)
		}},
		{"bf.madd/answers-in-order", func(b *bt) {
			k := b.key("f")
			b.do([]any{flag(true), flag(true), flag(false)}, "BF.MADD", k, "a", "b", "a")
			b.do([]any{flag(true), flag(true), flag(false)}, "BF.MEXISTS", k, "a", "b", "c")
			b.do([]any{flag(false)}, "BF.MADD", k, "b")
			b.do(2, "BF.CARD", k)
		}},
		{"bf.missing-key", func(b *bt) {
			k := b.key("nope")
			b.do(flag(false), "BF.EXISTS", k, "a")
			b.do([]any{flag(false), flag(false), flag(false)}, "BF.MEXISTS", k, "a", "b", "c")
			b.do(0, "BF.CARD", k)
			b.do(errReply("ERR not found"), "BF.INFO", k)
			b.do(errReply("ERR not found"), "BF.INFO", k, "CAPACITY")
			b.do(errReply("ERR not found"), "BF.INFO", k, "nonsense")
			b.do(errReply("ERR not found"), "BF.SCANDUMP", k, "0")
			b.do(errReply("ERR not found"), "BF.SCANDUMP", k, "abc")
			b.do(errReply("ERR not found"), "BF.INSERT", k, "NOCREATE", "ITEMS", "a")
			b.do(0, "EXISTS", k)
		}},
		{"bf.nonscaling/full-add", func(b *bt) {
			k := b.key("f")
			b.do("OK", "BF.RESERVE", k, "0.01", "5", "NONSCALING")
			ones, i := 0, 0
			for ; i < 100; i++ {
				v, err := b.d.Do(b.ctx, "BF.ADD", k, "item"+strconv.Itoa(i)).Result()
				if err != nil {
					if err.Error() != errFullText {
						b.Fatalf("BF.ADD item%d: error %q, want %q", i, err, errFullText)
					}
					break
				}
				if f, msg := b.flagOf(v); msg != "" {
					b.Fatalf("BF.ADD item%d: %s", i, msg)
				} else if f {
					ones++
				}
			}
			if ones != 5 {
				b.Errorf("the filter of capacity 5 took %d new items before it was full, want 5", ones)
			}
			b.do(errReply(errFullText), "BF.ADD", k, "another")
			b.do(flag(false), "BF.ADD", k, "item0") // present: still 0
			b.do(flag(true), "BF.EXISTS", k, "item0")
			b.do(infoPairs(5, positive, 1, 5, null{}), "BF.INFO", k)
			b.do(5, "BF.CARD", k)
		}},
		{"bf.nonscaling/full-madd-stops", func(b *bt) {
			k := b.key("f")
			b.do("OK", "BF.RESERVE", k, "0.01", "3", "NONSCALING")
			b.do([]any{flag(true), flag(true), flag(true), errReply(errFullText)}, "BF.MADD", k, "a", "b", "c", "d", "e")
			// Processing stops at the error: "b" after it is not answered.
			b.do([]any{flag(false), errReply(errFullText)}, "BF.MADD", k, "a", "d", "b")
			b.do([]any{flag(false), flag(false)}, "BF.MADD", k, "c", "a")
			b.do([]any{flag(false), flag(false)}, "BF.MEXISTS", k, "d", "e")
			b.do(3, "BF.CARD", k)
		}},
		{"bf.nonscaling/full-insert-stops", func(b *bt) {
			k := b.key("f")
			b.do([]any{flag(true), flag(true), errReply(errFullText)}, "BF.INSERT", k, "CAPACITY", "2", "NONSCALING", "ITEMS", "a", "b", "c", "d")
			b.do([]any{flag(false), flag(false)}, "BF.INSERT", k, "NOCREATE", "ITEMS", "a", "b")
			b.do([]any{errReply(errFullText)}, "BF.INSERT", k, "ITEMS", "c", "a")
			b.do(errReply(errFullText), "BF.ADD", k, "c")
		}},
	}
}

func insertRows() []behaviourRow {
	return []behaviourRow{
		{"bf.insert/creates-with-options", func(b *bt) {
			k := b.key("f")
			b.do([]any{flag(true), flag(true), flag(false)}, "BF.INSERT", k, "CAPACITY", "1000", "ERROR", "0.001", "EXPANSION", "4", "ITEMS", "a", "b", "a")
			b.do(infoPairs(1000, positive, 1, 2, 4), "BF.INFO", k)
			b.do([]any{flag(true)}, "BF.INSERT", b.key("default-rate"), "CAPACITY", "1000", "ITEMS", "a")
			if tight, loose := b.info(k)["Size"].(int64), b.info(b.key("default-rate"))["Size"].(int64); tight <= loose {
				b.Errorf("Size at ERROR 0.001 = %d, at the default 0.01 = %d; want the tighter rate larger", tight, loose)
			}
		}},
		{"bf.insert/any-order-and-case", func(b *bt) {
			b.do([]any{flag(true)}, "bf.insert", b.key("a"), "items", "x")
			b.do(infoPairs(100, positive, 1, 1, 2), "BF.INFO", b.key("a"))
			b.do([]any{flag(true)}, "BF.INSERT", b.key("b"), "nonscaling", "error", "0.1", "Capacity", "10", "ITEMS", "x")
			b.do(infoPairs(10, positive, 1, 1, null{}), "BF.INFO", b.key("b"))
			// After ITEMS, every argument is an item, keywords included.
			b.do([]any{flag(true), flag(true)}, "BF.INSERT", b.key("c"), "ITEMS", "ITEMS", "NOCREATE")
			b.do(flag(true), "BF.EXISTS", b.key("c"), "NOCREATE")
		}},
		{"bf.insert/options-ignored-on-existing-key", func(b *bt) {
			k := b.key("f")
			b.do("OK", "BF.RESERVE", k, "0.01", "100")
			b.do([]any{flag(true)}, "BF.INSERT", k, "CAPACITY", "5000", "ERROR", "0.2", "EXPANSION", "8", "NONSCALING", "ITEMS", "a")
			b.do(infoPairs(100, positive, 1, 1, 2), "BF.INFO", k)
		}},
		{"bf.insert/nocreate", func(b *bt) {
			k := b.key("f")
			b.do(errReply("ERR not found"), "BF.INSERT", k, "NOCREATE", "ITEMS", "a")
			b.do(errReply("ERR not found"), "BF.INSERT", k, "CAPACITY", "10", "NOCREATE", "ITEMS", "a")
			b.do(0, "EXISTS", k)
			b.do(flag(true), "BF.ADD", k, "a")
			b.do([]any{flag(false), flag(true)}, "BF.INSERT", k, "NOCREATE", "ITEMS", "a", "b")
		}},
		{"bf.insert/errors", func(b *bt) {
			k := b.key("f")
			cases := []struct {
				args []any
				want string
			}{
				{[]any{"ERROR", "abc", "ITEMS", "a"}, "Bad error rate"},
				{[]any{"CAPACITY", "1.5", "ITEMS", "a"}, "Bad capacity"},
				{[]any{"CAPACITY", "1e3", "ITEMS", "a"}, "Bad capacity"},
				{[]any{"EXPANSION", "x", "ITEMS", "a"}, "Bad expansion"},
				{[]any{"FOO", "ITEMS", "a"}, "Unknown argument received"},
				{[]any{"CAPACITY", "10", "NOCREATE"}, arityErr("bf.insert")},
				{[]any{"CAPACITY", "10", "ITEMS"}, arityErr("bf.insert")},
				{[]any{"NOCREATE", "CAPACITY"}, arityErr("bf.insert")},
				{[]any{"ITEMS"}, arityErr("bf.insert")},
				// Out of range: the same texts as a value that does not
				// parse (RedisBloom 8), before the items' arity.
				{[]any{"ERROR", "2", "ITEMS", "a"}, "Bad error rate"},
				{[]any{"CAPACITY", "0", "ITEMS", "a"}, "Bad capacity"},
				{[]any{"CAPACITY", "1073741825", "ITEMS", "a"}, "Bad capacity"},
				{[]any{"EXPANSION", "40000", "ITEMS", "a"}, "Bad expansion"},
				{[]any{"EXPANSION", "-1", "NOCREATE"}, "Bad expansion"},
				{[]any{"ERROR", "0", "CAPACITY", "0", "ITEMS", "a"}, "Bad error rate"},
				{[]any{"", "ITEMS", "a"}, "Unknown argument received"},
				{[]any{"9", "ITEMS", "a"}, "Unknown argument received"},
			}
			for _, c := range cases {
				b.do(errReply(c.want), append([]any{"BF.INSERT", k}, c.args...)...)
			}
			b.do(0, "EXISTS", k)
			// The options are checked even when the key exists.
			b.do(flag(true), "BF.ADD", k, "a")
			for _, c := range cases {
				b.do(errReply(c.want), append([]any{"BF.INSERT", k}, c.args...)...)
			}
			b.do(1, "BF.CARD", k)
		}},
		{"bf.insert/abbreviations", func(b *bt) {
			// RedisBloom knows an option by its first letter (and the
			// second of e, the third of n).
			b.do([]any{flag(true)}, "BF.INSERT", b.key("c"), "cap", "50", "ER", "0.1", "exp", "3", "ITEMS", "x")
			b.do(field{"Capacity", 50}, "BF.INFO", b.key("c"), "CAPACITY")
			b.do(field{"Expansion rate", 3}, "BF.INFO", b.key("c"), "EXPANSION")
			b.do([]any{flag(true), errReply("ERR non scaling filter is full")}, "BF.INSERT", b.key("n"), "NOPE", "C", "1", "icecream", "x", "y")
			b.do(field{"Expansion rate", null{}}, "BF.INFO", b.key("n"), "EXPANSION")
			b.do(errReply("ERR not found"), "BF.INSERT", b.key("m"), "noc", "I", "x")
			b.do([]any{flag(true), flag(true)}, "BF.INSERT", b.key("i"), "ITEMS", "ITEMS", "x")
			b.do(2, "BF.CARD", b.key("i"))
		}},
		{"bf.insert/expansion-zero-is-nonscaling", func(b *bt) {
			k := b.key("f")
			b.do([]any{flag(true)}, "BF.INSERT", k, "EXPANSION", "0", "ITEMS", "a")
			b.do(infoPairs(100, positive, 1, 1, null{}), "BF.INFO", k)
		}},
	}
}

func infoRows() []behaviourRow {
	return []behaviourRow{
		{"bf.debug/sub-filters", func(b *bt) {
			k := b.key("f")
			b.do(errReply("ERR not found"), "BF.DEBUG", k)
			b.do("OK", "BF.RESERVE", k, "0.01", "10", "EXPANSION", "3")
			ones := b.madd(k, items("item", 30))
			// RedisBloom's lines, with the filter's own geometry: sub-filter
			// i has capacity 10·3^i and error 0.005/2^i; all but the last
			// are full.
			line := regexp.MustCompile(`^bytes:(\d+) bits:(\d+) hashes:[1-9]\d* hashwidth:64 capacity:(\d+) size:(\d+) ratio:(\S+)$`)
			b.do(check(func(v any, err error) string {
				arr, ok := v.([]any)
				if err != nil || !ok || len(arr) < 3 {
					return fmt.Sprintf("got %#v, %v; want size and two sub-filters or more", v, err)
				}
				if arr[0] != "size:"+strconv.Itoa(ones) {
					return fmt.Sprintf("first element %q, want size:%d", arr[0], ones)
				}
				capacity, rate, items := 10, 0.005, 0
				for i, e := range arr[1:] {
					m := line.FindStringSubmatch(fmt.Sprint(e))
					if m == nil {
						return fmt.Sprintf("sub-filter %d: %q is not RedisBloom's line", i, e)
					}
					bytes, _ := strconv.Atoi(m[1])
					bits, _ := strconv.Atoi(m[2])
					n, _ := strconv.Atoi(m[4])
					items += n
					if bits != 8*bytes || m[3] != strconv.Itoa(capacity) || m[5] != strconv.FormatFloat(rate, 'g', 6, 64) ||
						(i < len(arr)-2 && n != capacity) {
						return fmt.Sprintf("sub-filter %d: %q, want capacity %d, ratio %g, bits = 8·bytes", i, e, capacity, rate)
					}
					capacity, rate = 3*capacity, rate/2
				}
				if items != ones {
					return fmt.Sprintf("the sub-filters hold %d items, want %d", items, ones)
				}
				return ""
			}), "BF.DEBUG", k)
			b.do(errReply(arityErr("bf.debug")), "BF.DEBUG", k, "x")
		}},
		{"bf.info/fields", func(b *bt) {
			k := b.key("f")
			b.do("OK", "BF.RESERVE", k, "0.01", "100")
			b.do([]any{flag(true), flag(true), flag(true)}, "BF.MADD", k, "a", "b", "c")
			full := b.info(k)
			for _, f := range []struct {
				arg  string
				want field
			}{
				{"CAPACITY", field{"Capacity", 100}}, {"capacity", field{"Capacity", 100}},
				{"SIZE", field{"Size", full["Size"]}}, {"Filters", field{"Number of filters", 1}},
				{"ITEMS", field{"Number of items inserted", 3}}, {"EXPANSION", field{"Expansion rate", 2}},
			} {
				b.do(f.want, "BF.INFO", k, f.arg)
			}
			b.do(infoPairs(100, full["Size"], 1, 3, 2), "BF.INFO", k)
			b.do(errReply("Invalid information value"), "BF.INFO", k, "FOO")
			b.do(errReply("Invalid information value"), "BF.INFO", k, "")
			b.do(errReply(arityErr("bf.info")), "BF.INFO", k, "CAPACITY", "SIZE")
		}},
		{"bf.info/nonscaling-expansion-null", func(b *bt) {
			k := b.key("f")
			b.do("OK", "BF.RESERVE", k, "0.01", "100", "NONSCALING")
			b.do(infoPairs(100, positive, 1, 0, null{}), "BF.INFO", k)
			b.do(field{"Expansion rate", null{}}, "BF.INFO", k, "EXPANSION")
		}},
		{"bf.info/growth-counters", func(b *bt) {
			k := b.key("f")
			b.do("OK", "BF.RESERVE", k, "0.01", "100")
			before := b.info(k)["Size"].(int64)
			ones := b.madd(k, items("item", 1500))
			if ones > 1500 || ones < 1450 {
				b.Errorf("%d of 1500 distinct items answered 1; want 1500 minus a few false positives", ones)
			}
			capacity, filters := grown(100, 2, ones)
			if capacity != 1500 || filters != 4 {
				b.Fatalf("grown(100, 2, %d) = %d, %d; want 1500, 4 (100+200+400+800)", ones, capacity, filters)
			}
			b.do(infoPairs(1500, positive, 4, ones, 2), "BF.INFO", k)
			b.do(ones, "BF.CARD", k)
			if after := b.info(k)["Size"].(int64); after <= before*10 {
				b.Errorf("Size %d after growing to 15 times the capacity, %d before; want it grown with the filters", after, before)
			}
			// Every added item is found, in every sub-filter.
			for _, f := range b.flags(append([]any{"BF.MEXISTS", k}, items("item", 1500)...)...) {
				if !f {
					b.Fatal("an added item is not found")
				}
			}
		}},
		{"bf.info/expansion-growth", func(b *bt) {
			k := b.key("f")
			b.do("OK", "BF.RESERVE", k, "0.01", "10", "EXPANSION", "4")
			ones := b.madd(k, items("item", 100))
			capacity, filters := grown(10, 4, ones)
			b.do(infoPairs(capacity, positive, filters, ones, 4), "BF.INFO", k)
			if filters != 3 {
				b.Errorf("%d sub-filters after %d items at capacity 10, expansion 4; want 3 (10+40+160)", filters, ones)
			}
		}},
	}
}
