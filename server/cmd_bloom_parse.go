package server

import "strings"

// The arguments of BF.RESERVE and BF.INSERT, parsed as RedisBloom 8
// parses them: the same quirks, the same check order, the same replies
// (docs/SERVER.md, "Compatibility").

// RedisBloom's limits on BF.RESERVE and BF.INSERT arguments.
const (
	maxCapacity  = 1 << 30
	maxExpansion = 32768
	maxErrorRate = 0.25 // higher rates are capped to it, silently
)

// Range checks, shared by both commands.
func rateInRange(r float64) bool    { return r > 0 && r < 1 }
func capacityInRange(c int64) bool  { return c >= 1 && c <= maxCapacity }
func expansionInRange(x int64) bool { return x >= 0 && x <= maxExpansion }

// The replies of BF.RESERVE to bad arguments.
const (
	msgBadRate        = "ERR bad error rate"
	msgRateRange      = "ERR error rate must be in the range (0.000000, 1.000000)"
	msgBadCapacity    = "ERR bad capacity"
	msgCapacityRange  = "ERR capacity must be in the range [1, 1073741824]"
	msgNoExpansion    = "ERR no expansion"
	msgBadExpansion   = "ERR bad expansion"
	msgExpansionRange = "ERR expansion must be in the range [0, 32768]"
	msgCannotExpand   = "Nonscaling filters cannot expand"
)

// parseReserve parses BF.RESERVE key error_rate capacity [EXPANSION n]
// [NONSCALING] (the caller checked the arity: 4 to 7 arguments) and
// returns the filter's parameters, or the reply for bad arguments.
//
// As RedisBloom: the error rate, then the capacity, each parsed then
// range-checked; NONSCALING and EXPANSION are the first argument anywhere
// (the key included) equal to the word, so a key named "nonscaling" makes
// a non-scaling filter and one named "expansion" takes the error rate as
// its expansion; words it does not know are ignored. EXPANSION 0 means
// non-scaling; with NONSCALING, any other expansion (in range or not) is
// refused before its range is checked.
func parseReserve(args [][]byte) (createOpts, string) {
	o := defaultCreate
	rate, ok := parseFloat(args[2])
	switch {
	case !ok:
		return o, msgBadRate
	case !rateInRange(rate):
		return o, msgRateRange
	}
	o.rate = min(rate, maxErrorRate)
	capacity, ok := parseInt(args[3])
	switch {
	case !ok:
		return o, msgBadCapacity
	case !capacityInRange(capacity):
		return o, msgCapacityRange
	}
	o.capacity = uint64(capacity)
	o.nonScaling = argIndex(args, "NONSCALING") >= 0
	expansion := int64(o.expansion)
	if at := argIndex(args, "EXPANSION"); at >= 0 {
		if at+1 == len(args) {
			return o, msgNoExpansion
		}
		if expansion, ok = parseInt(args[at+1]); !ok {
			return o, msgBadExpansion
		}
		switch {
		case expansion == 0:
			o.nonScaling = true
		case o.nonScaling:
			return o, msgCannotExpand
		case !expansionInRange(expansion):
			return o, msgExpansionRange
		}
	}
	return o.scaling(expansion), ""
}

// argIndex is RedisBloom's RMUtil_ArgIndex: the first argument equal to
// word, case-insensitively, or -1.
func argIndex(args [][]byte, word string) int {
	for i, a := range args {
		if strings.EqualFold(string(a), word) {
			return i
		}
	}
	return -1
}

// scaling sets o's expansion, as given (RedisBloom records it even for a
// non-scaling filter); 0 means non-scaling.
func (o createOpts) scaling(expansion int64) createOpts {
	o.expansion = uint64(expansion)
	if expansion == 0 {
		o.nonScaling = true
	}
	return o
}

// insertReq is a parsed BF.INSERT.
type insertReq struct {
	create   createOpts
	noCreate bool
	items    [][]byte
}

// errArity marks a BF.INSERT whose options or items are cut short:
// RedisBloom answers it with the wrong-arity error.
const errArity = "\x00arity"

// parseInsert parses BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION n]
// [NOCREATE] [NONSCALING] ITEMS item… and returns the request, or the
// reply for bad arguments (errArity for the arity error).
//
// As RedisBloom, an option is known by its first letter, case-insensitive:
// i (the items follow), c (capacity), e (error rate if the second letter
// is r, else expansion), n (NOCREATE if the third letter is c, else
// NONSCALING); anything else is "Unknown argument received". Options may
// repeat (the last wins) and come in any order. Each value is checked as
// it is read, so the first bad one is the reply, before the items'
// arity; creation options are checked even if the key exists, and
// ignored there.
func parseInsert(args [][]byte) (insertReq, string) {
	req := insertReq{create: defaultCreate}
	expansion := int64(req.create.expansion)
	i := 2
	for ; i < len(args); i++ {
		word := args[i]
		letter := lower(word, 0)
		if letter == 'i' {
			i++
			break
		}
		switch letter {
		case 'n':
			if lower(word, 2) == 'c' {
				req.noCreate = true
			} else {
				req.create.nonScaling = true
			}
			continue
		case 'c', 'e':
		default:
			return req, "Unknown argument received"
		}
		if i+1 == len(args) {
			return req, errArity
		}
		i++
		var ok bool
		switch {
		case letter == 'c':
			var c int64
			if c, ok = parseInt(args[i]); !ok || !capacityInRange(c) {
				return req, "Bad capacity"
			}
			req.create.capacity = uint64(c)
		case lower(word, 1) == 'r':
			var r float64
			if r, ok = parseFloat(args[i]); !ok || !rateInRange(r) {
				return req, "Bad error rate"
			}
			req.create.rate = min(r, maxErrorRate)
		default:
			if expansion, ok = parseInt(args[i]); !ok || !expansionInRange(expansion) {
				return req, "Bad expansion"
			}
		}
	}
	if i >= len(args) {
		return req, errArity // no items marker, or nothing after it
	}
	req.items = args[i:]
	req.create = req.create.scaling(expansion)
	return req, ""
}

// lower is the i-th byte of word in lower case, or 0 past its end (C's
// string terminator: RedisBloom reads the third letter of "N" there).
func lower(word []byte, i int) byte {
	if i >= len(word) {
		return 0
	}
	c := word[i]
	if 'A' <= c && c <= 'Z' {
		c += 'a' - 'A'
	}
	return c
}
