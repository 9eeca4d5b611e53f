package server

import (
	"fmt"
	"strconv"
)

// Rows for the CF.* commands (cuckoo filters), with RedisBloom 8's
// replies: written against go-redis only, so the same rows run on every
// backend with cuckoo filters. Rows named cf.dump/… use SCANDUMP and
// LOADCHUNK, cf.keys/rename RENAME, for a backend to skip by name.

// cfInfo is CF.INFO's full reply.
func cfInfo(size, buckets, filters, items, deleted, bucketSize, expansion, maxIter int) pairs {
	return pairs{"Size", size, "Number of buckets", buckets, "Number of filters", filters,
		"Number of items inserted", items, "Number of items deleted", deleted, "Bucket size", bucketSize,
		"Expansion rate", expansion, "Max iterations", maxIter}
}

// cfFilters returns CF.INFO's number of sub-filters of key.
func (b *bt) cfFilters(key string) int {
	b.Helper()
	v, err := b.d.Do(b.ctx, "CF.INFO", key).Result()
	if err != nil {
		b.Fatalf("CF.INFO %s: %v", key, err)
	}
	n, _ := b.pairMap(v)["Number of filters"].(int64)
	return int(n)
}

func cuckooRows() []behaviourRow {
	return append(cuckooCreateRows(), cuckooUseRows()...)
}

func cuckooCreateRows() []behaviourRow {
	return []behaviourRow{
		{"cf.reserve/defaults", func(b *bt) {
			k := b.key("c")
			b.do("OK", "CF.RESERVE", k, "1000")
			b.do(cfInfo(40+16+1024, 512, 1, 0, 0, 2, 1, 20), "CF.INFO", k)
			b.do("bktsize:2 buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1", "CF.DEBUG", k)
			b.do("MBbloomCF", "TYPE", k)
			b.do(errReply("ERR item exists"), "CF.RESERVE", k, "1000")
		}},
		{"cf.reserve/options-rounded", func(b *bt) {
			k := b.key("c")
			b.do("OK", "CF.RESERVE", k, "1025", "BUCKETSIZE", "4", "MAXITERATIONS", "7", "EXPANSION", "3")
			b.do("bktsize:4 buckets:256 items:0 deletes:0 filters:1 max_iterations:7 expansion:4", "CF.DEBUG", k)
		}},
		{"cf.reserve/errors", func(b *bt) {
			k := b.key("c")
			for _, c := range []struct {
				want string
				args []any
			}{
				{"Bad capacity", []any{"abc"}},
				{"Capacity must be in the range [2 * BUCKETSIZE, 1073741824]", []any{"3"}},
				{"Capacity must be in the range [2 * BUCKETSIZE, 1073741824]", []any{"1152921504606846976"}},
				{"Capacity must be in the range [2 * BUCKETSIZE, 1073741824]", []any{"100", "BUCKETSIZE", "51"}},
				{"Couldn't parse MAXITERATIONS", []any{"100", "MAXITERATIONS", "x"}},
				{"MAXITERATIONS: value must be in the range [1, 65535]", []any{"100", "MAXITERATIONS", "0"}},
				{"BUCKETSIZE: value must be in the range [1, 255]", []any{"100", "BUCKETSIZE", "256"}},
				{"EXPANSION: value must be in the range [0, 32768]", []any{"100", "EXPANSION", "32769"}},
				{"ERR wrong number of arguments for 'cf.reserve' command", []any{"100", "EXPANSION"}},
			} {
				b.do(errReply(c.want), append([]any{"CF.RESERVE", k}, c.args...)...)
			}
			b.do(0, "EXISTS", k)
		}},
		{"cf.reserve/over-the-per-filter-limit", func(b *bt) {
			// 2^30 slots of one byte: 1 GiB, over behaviourConfig's limit.
			k := b.key("c")
			b.do(errReply("ERR Insufficient memory to create filter"), "CF.RESERVE", k, "1073741824", "BUCKETSIZE", "1")
			b.do(0, "EXISTS", k)
		}},
		{"cf.add/duplicates-and-nx", func(b *bt) {
			k := b.key("c")
			b.do(flag(true), "CF.ADD", k, "a")
			b.do(flag(true), "CF.ADD", k, "a")
			b.do(2, "CF.COUNT", k, "a")
			b.do(flag(false), "CF.ADDNX", k, "a")
			b.do(flag(true), "CF.ADDNX", k, "b")
			b.do(cfInfo(40+16+1024, 512, 1, 3, 0, 2, 1, 20), "CF.INFO", k)
		}},
		{"cf.insert/replies", func(b *bt) {
			k := b.key("c")
			b.do([]any{flag(true), flag(true)}, "CF.INSERT", k, "CAPACITY", "100", "ITEMS", "a", "b")
			b.do([]any{0, 1, 0}, "CF.INSERTNX", k, "ITEMS", "a", "c", "c") // integers in RESP3 too
			b.do("bktsize:2 buckets:64 items:3 deletes:0 filters:1 max_iterations:20 expansion:1", "CF.DEBUG", k)
			b.do(errReply("ERR not found"), "CF.INSERT", b.key("none"), "NOCREATE", "ITEMS", "a")
			b.do(errReply("Unknown argument received"), "CF.INSERT", k, "ERROR", "0.1", "ITEMS", "a")
			b.do(errReply("Capacity must be in the range [cf-bucket-size * 2, 1073741824]"), "CF.INSERT", k, "CAPACITY", "3", "ITEMS", "a")
			b.do(errReply("ERR wrong number of arguments for 'cf.insertnx' command"), "CF.INSERTNX", k, "NOCREATE", "ITEMS")
		}},
		{"cf.full/expansion-0", func(b *bt) {
			k := b.key("c")
			b.do("OK", "CF.RESERVE", k, "4", "BUCKETSIZE", "1", "EXPANSION", "0")
			res := b.do(anyOK{}, append([]any{"CF.INSERT", k, "ITEMS"}, items("i", 10)...)...).([]any)
			stored := 0
			for _, r := range res {
				if r == int64(1) || r == true {
					stored++
				} else if r != int64(-1) && r != false {
					b.Errorf("CF.INSERT element %#v, want 1 or -1 (RESP3: true or false)", r)
				}
			}
			if stored != 4 {
				b.Errorf("a filter of 4 slots stored %d of 10 items", stored)
			}
			b.do(errReply("Filter is full"), "CF.ADD", k, "more")
			b.do([]any{-1}, "CF.INSERTNX", k, "ITEMS", "more")
			b.do(cfInfo(40+16+4, 4, 1, 4, 0, 1, 0, 20), "CF.INFO", k)
		}},
	}
}

func cuckooUseRows() []behaviourRow {
	return []behaviourRow{
		{"cf.grow/max-expansions", func(b *bt) {
			k := b.key("c")
			b.do("OK", "CF.RESERVE", k, "2", "BUCKETSIZE", "1")
			b.do(anyOK{}, append([]any{"CF.INSERT", k, "ITEMS"}, items("m", 100)...)...)
			if n := b.cfFilters(k); n < 32 {
				b.Fatalf("%d sub-filters after 100 items in slots of 2", n)
			}
			b.do(errReply("Maximum expansions reached"), "CF.ADD", k, "x")
			b.do(errReply("Maximum expansions reached"), "CF.INSERTNX", k, "ITEMS", "m1")
			b.do(flag(true), "CF.EXISTS", k, "m99")
		}},
		{"cf.del/duplicates-and-compaction", func(b *bt) {
			k := b.key("c")
			b.do("OK", "CF.RESERVE", k, "4", "BUCKETSIZE", "1")
			its := items("d", 20)
			b.do(anyOK{}, append([]any{"CF.INSERT", k, "ITEMS", "dup", "dup"}, its...)...)
			grown := b.cfFilters(k)
			b.do(flag(true), "CF.DEL", k, "dup")
			b.do(1, "CF.COUNT", k, "dup")
			b.do(flag(true), "CF.DEL", k, "dup")
			b.do(flag(false), "CF.DEL", k, "dup")
			for _, it := range its[:10] {
				b.do(flag(true), "CF.DEL", k, it)
			}
			if n := b.cfFilters(k); n >= grown {
				b.Errorf("%d sub-filters after deleting half, %d before: no compaction", n, grown)
			}
			for _, it := range its[10:] {
				b.do(flag(true), "CF.EXISTS", k, it)
			}
			b.do("OK", "CF.COMPACT", k)
		}},
		{"cf.missing-key", func(b *bt) {
			k := b.key("nope")
			b.do(flag(false), "CF.EXISTS", k, "a")
			b.do([]any{flag(false), flag(false)}, "CF.MEXISTS", k, "a", "b")
			b.do(0, "CF.COUNT", k, "a")
			b.do(errReply("Not found"), "CF.DEL", k, "a")
			b.do(errReply("Cuckoo filter was not found"), "CF.COMPACT", k)
			b.do(errReply("ERR not found"), "CF.INFO", k)
			b.do(errReply("ERR not found"), "CF.DEBUG", k)
			b.do(errReply("ERR not found"), "CF.SCANDUMP", k, "0")
			b.do(errReply("Invalid position"), "CF.SCANDUMP", k, "-1")
			b.do(0, "EXISTS", k)
		}},
		{"cf.wrongtype", func(b *bt) {
			bf, cf := b.key("bf"), b.key("cf")
			b.do(flag(true), "BF.ADD", bf, "a")
			b.do(flag(true), "CF.ADD", cf, "a")
			for _, args := range [][]any{{"CF.ADD", bf, "a"}, {"CF.RESERVE", bf, "100"}, {"CF.INFO", bf},
				{"BF.ADD", cf, "a"}, {"BF.RESERVE", cf, "0.01", "100"}, {"BF.CARD", cf}, {"BF.INFO", cf}} {
				b.do(errReply(errWrongType), args...)
			}
			b.do(flag(false), "CF.EXISTS", bf, "a")
			b.do(flag(false), "BF.EXISTS", cf, "a")
			b.do(errReply("Not found"), "CF.DEL", bf, "a")
			b.do("MBbloom--", "TYPE", bf)
			b.do("MBbloomCF", "TYPE", cf)
		}},
		{"cf.keys/expire-and-delete", func(b *bt) {
			k := b.key("c")
			b.do(flag(true), "CF.ADD", k, "a")
			b.do(1, "EXPIRE", k, "100")
			b.do(check(func(v any, err error) string {
				if n, ok := v.(int64); !ok || n <= 0 || n > 100 {
					return fmt.Sprintf("TTL %v, %v", v, err)
				}
				return ""
			}), "TTL", k)
			b.do(1, "DEL", k)
			b.do(flag(false), "CF.EXISTS", k, "a")
		}},
		{"cf.keys/rename", func(b *bt) {
			k, j := b.key("c"), b.key("d")
			b.do(flag(true), "CF.ADD", k, "a")
			b.do("OK", "RENAME", k, j)
			b.do(flag(true), "CF.EXISTS", j, "a")
			b.do("MBbloomCF", "TYPE", j)
		}},
		{"cf.dump/round-trip", func(b *bt) {
			src, dst := b.key("src"), b.key("dst")
			b.do("OK", "CF.RESERVE", src, "8", "EXPANSION", "2")
			its := items("r", 60)
			b.do(anyOK{}, append([]any{"CF.INSERT", src, "ITEMS"}, its...)...)
			chunks := 0
			for it := int64(0); chunks < 100; chunks++ {
				r := b.do(anyOK{}, "CF.SCANDUMP", src, strconv.FormatInt(it, 10)).([]any)
				if it = r[0].(int64); it == 0 {
					b.do([]any{0, null{}}, "CF.SCANDUMP", src, "100000")
					break
				}
				b.do("OK", "CF.LOADCHUNK", dst, it, r[1])
			}
			if chunks < 3 {
				b.Errorf("%d chunks: the filter did not grow", chunks)
			}
			want := b.do(anyOK{}, "CF.INFO", src)
			b.do(anyOK{}, "CF.INFO", dst)
			if got := b.do(anyOK{}, "CF.INFO", dst); fmt.Sprint(got) != fmt.Sprint(want) {
				b.Errorf("CF.INFO of the copy %v, of the source %v", got, want)
			}
			b.do([]any{flag(true), flag(true)}, "CF.MEXISTS", dst, its[0], its[59])
			b.do(errReply("ERR item exists"), "CF.LOADCHUNK", dst, "1", "0123456789012345678901234567890123456")
			b.do(errReply("Invalid header"), "CF.LOADCHUNK", b.key("new"), "1", "short")
			b.do(errReply("Couldn't load chunk!"), "CF.LOADCHUNK", dst, "3", "abc")
			b.do(errReply("Invalid position"), "CF.LOADCHUNK", dst, "0", "abc")
		}},
	}
}
