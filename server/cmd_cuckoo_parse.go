package server

import (
	"fmt"

	"github.com/bloomery/bloom/cuckoo"
)

// Parsing the CF.* commands' arguments, in RedisBloom 8's order and with
// its texts (docs/SERVER.md, "Cuckoo filters").

// cfOptions are CF.RESERVE's options, in the order RedisBloom checks
// them.
var cfOptions = []struct {
	word   string
	lo, hi int64
}{
	{"MAXITERATIONS", 1, cuckoo.MaxIterationsLimit},
	{"BUCKETSIZE", 1, cuckoo.MaxBucketSize},
	{"EXPANSION", 0, cuckoo.MaxExpansion},
}

// parseCFReserve parses CF.RESERVE key capacity [BUCKETSIZE b]
// [MAXITERATIONS m] [EXPANSION e] (an odd number of arguments: the
// caller checks) and returns the options or the error reply. As
// RedisBloom, each option is the first argument anywhere that equals its
// word, case-insensitively (the command's name and key included), its
// value the argument after it; other words are ignored.
func parseCFReserve(args [][]byte) (cuckooOpts, string) {
	capacity, ok := parseInt(args[2])
	if !ok {
		return cuckooOpts{}, "Bad capacity"
	}
	o := defaultCuckoo
	fields := [...]*uint64{&o.maxIterations, &o.bucketSize, &o.expansion}
	for i, opt := range cfOptions {
		if msg := parseCFOption(args, opt.word, opt.lo, opt.hi, fields[i]); msg != "" {
			return cuckooOpts{}, msg
		}
	}
	if capacity < 2*int64(o.bucketSize) || capacity > maxCuckooCapacity {
		return cuckooOpts{}, fmt.Sprintf("Capacity must be in the range [2 * BUCKETSIZE, %d]", maxCuckooCapacity)
	}
	o.capacity = uint64(capacity)
	return o, ""
}

// parseCFOption parses CF.RESERVE's option word into *v when it is
// present, or returns the error reply when its value does not parse or
// lies outside lo … hi. A word with no value after it (RedisBloom reads
// past its arguments there) does not parse.
func parseCFOption(args [][]byte, word string, lo, hi int64, v *uint64) string {
	i := argIndex(args, word)
	if i < 0 {
		return ""
	}
	var n int64
	ok := i+1 < len(args)
	if ok {
		n, ok = parseInt(args[i+1])
	}
	switch {
	case !ok:
		return "Couldn't parse " + word
	case n < lo || n > hi:
		return fmt.Sprintf("%s: value must be in the range [%d, %d]", word, lo, hi)
	}
	*v = uint64(n)
	return ""
}

// cfInsertReq is a parsed CF.INSERT or CF.INSERTNX.
type cfInsertReq struct {
	capacity uint64
	noCreate bool
	items    [][]byte
}

// parseCFInsert parses CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item…
// as RedisBloom does: options up to ITEMS, told apart by their first
// letter only (c, n, i, case-insensitively); the last CAPACITY wins, and
// a bad one answers at once. errArity when a CAPACITY has no value, or
// ITEMS is missing or last.
func parseCFInsert(args [][]byte) (cfInsertReq, string) {
	req := cfInsertReq{capacity: cuckoo.DefaultCapacity}
	pos, items := 2, -1
	for pos < len(args) && items < 0 {
		switch lower(args[pos], 0) {
		case 'c':
			if pos++; pos == len(args) {
				return req, errArity
			}
			c, ok := parseInt(args[pos])
			pos++
			if !ok {
				return req, "Bad capacity"
			}
			if c < 2*cuckoo.DefaultBucketSize || c > maxCuckooCapacity {
				return req, fmt.Sprintf("Capacity must be in the range [cf-bucket-size * 2, %d]", maxCuckooCapacity)
			}
			req.capacity = uint64(c)
		case 'i':
			pos++
			items = pos
		case 'n':
			req.noCreate = true
			pos++
		default:
			return req, "Unknown argument received"
		}
	}
	if items < 0 || items == len(args) {
		return req, errArity
	}
	req.items = args[items:]
	return req, ""
}
