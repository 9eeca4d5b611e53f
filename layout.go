package bloom

import "fmt"

// Layout says where an item's bits live in the bit array.
type Layout uint8

const (
	// Blocked puts all k bits of an item into one 512-bit block chosen by
	// its hash, so an operation touches a single cache line. It is the
	// default and the fastest layout; it needs more bits per key than
	// Classic for the same rate: Size gives +4.8% at p = 0.01, +9.8% at
	// 1e-3, +38.2% at 1e-6 and +52.8% at 1e-7 (docs/DESIGN.md §3).
	Blocked Layout = 1
	// Classic spreads the k bits over the whole array: least memory, one
	// cache miss per probe on large filters.
	Classic Layout = 2
	// RedisBloom is RedisBloom's own layout, for filters that must answer
	// exactly as RedisBloom does (false positives included) and move to
	// and from it by BF.SCANDUMP and BF.LOADCHUNK: RedisBloom's hash
	// (HashMurmur64A, never keyed), its bit placement (a + i·b) mod m, and
	// its sizing (bits per entry −ln p / ln²2, k = ⌈ln 2 · bpe⌉). Such a
	// filter has RedisBloom's false-positive rate, not Bloomery's
	// guarantee: no margin, and double hashing that degenerates for some
	// items, so small filters miss their target p (2.7× at p = 1e-4 and
	// 100 items; docs/DESIGN.md §10 has the figures). Use it for
	// compatibility only. A Scalable filter in this layout grows by
	// RedisBloom's rules (WithRedisBloomSplit is implied), and its dump
	// (DumpChunk) is RedisBloom's BF.SCANDUMP.
	RedisBloom Layout = 3
)

// String returns "blocked", "classic" or "redisbloom".
func (l Layout) String() string {
	switch l {
	case Blocked:
		return "blocked"
	case Classic:
		return "classic"
	case RedisBloom:
		return "redisbloom"
	}
	return fmt.Sprintf("layout(%d)", uint8(l))
}

// ParseLayout parses "blocked", "classic" or "redisbloom".
func ParseLayout(s string) (Layout, error) {
	switch s {
	case "blocked":
		return Blocked, nil
	case "classic":
		return Classic, nil
	case "redisbloom":
		return RedisBloom, nil
	}
	return 0, fmt.Errorf("%w: %q (want blocked, classic or redisbloom)", ErrInvalidLayout, s)
}
