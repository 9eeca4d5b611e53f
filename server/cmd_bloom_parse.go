package server

import "strings"

// RedisBloom's limits on BF.RESERVE and BF.INSERT arguments (DESIGN §7).
const (
	maxCapacity  = 1 << 30
	maxExpansion = 32768
	maxErrorRate = 0.25 // higher rates are capped to it, silently
)

// parseReserve parses BF.RESERVE key error_rate capacity [EXPANSION n]
// [NONSCALING] (the caller checked the arity: 4 to 7 arguments) and
// returns the filter's parameters, or the reply for bad arguments. The
// checks come in RedisBloom's order. As RedisBloom, it ignores words it
// does not know.
func parseReserve(args [][]byte) (createOpts, string) {
	o := defaultCreate
	var msg string
	if o.rate, msg = parseRate(args[2], "ERR bad error rate"); msg != "" {
		return o, msg
	}
	if o.capacity, msg = parseCapacity(args[3], "ERR bad capacity"); msg != "" {
		return o, msg
	}
	expansion, hasExpansion := int64(o.expansion), false
	for i := 4; i < len(args); i++ {
		switch {
		case strings.EqualFold(string(args[i]), "NONSCALING"):
			o.nonScaling = true
		case strings.EqualFold(string(args[i]), "EXPANSION"):
			if i+1 == len(args) {
				return o, "ERR no expansion"
			}
			i++
			if expansion, msg = parseExpansion(args[i], "ERR bad expansion"); msg != "" {
				return o, msg
			}
			hasExpansion = true
		}
	}
	if o.nonScaling && hasExpansion && expansion != 0 {
		return o, "Nonscaling filters cannot expand"
	}
	return o.scaling(expansion), ""
}

// parseRate parses an error rate: bad is the reply when b is not a
// number (RESERVE and INSERT word it differently); the range and the cap
// at maxErrorRate are common.
func parseRate(b []byte, bad string) (float64, string) {
	rate, ok := parseFloat(b)
	if !ok {
		return 0, bad
	}
	if !(rate > 0 && rate < 1) {
		return 0, "ERR error rate must be in the range (0.000000, 1.000000)"
	}
	return min(rate, maxErrorRate), ""
}

// parseCapacity parses a capacity, as parseRate.
func parseCapacity(b []byte, bad string) (uint64, string) {
	c, ok := parseInt(b)
	if !ok {
		return 0, bad
	}
	if c < 1 || c > maxCapacity {
		return 0, "ERR capacity must be in the range [1, 1073741824]"
	}
	return uint64(c), ""
}

// parseExpansion parses an expansion (0: non-scaling), as parseRate.
func parseExpansion(b []byte, bad string) (int64, string) {
	x, ok := parseInt(b)
	if !ok {
		return 0, bad
	}
	if x < 0 || x > maxExpansion {
		return 0, "ERR expansion must be in the range [0, 32768]"
	}
	return x, ""
}

// scaling sets o's expansion; 0 means non-scaling.
func (o createOpts) scaling(expansion int64) createOpts {
	if expansion == 0 || o.nonScaling {
		o.nonScaling, o.expansion = true, 0
	} else {
		o.expansion = uint64(expansion)
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
// reply for bad arguments (errArity for the arity error). Keywords may
// come in any order and case; creation options are checked here even if
// the key exists, as RedisBloom does, and ignored there.
func parseInsert(args [][]byte) (insertReq, string) {
	req := insertReq{create: defaultCreate}
	expansion := int64(req.create.expansion)
	for i := 2; i < len(args); i++ {
		word := strings.ToUpper(string(args[i]))
		if word == "ITEMS" {
			if i+1 == len(args) {
				return req, errArity
			}
			req.items = args[i+1:]
			break
		}
		switch word {
		case "NOCREATE":
			req.noCreate = true
			continue
		case "NONSCALING":
			req.create.nonScaling = true
			continue
		case "CAPACITY", "ERROR", "EXPANSION":
		default:
			return req, "Unknown argument received"
		}
		if i+1 == len(args) {
			return req, errArity
		}
		i++
		var msg string
		switch word {
		case "CAPACITY":
			req.create.capacity, msg = parseCapacity(args[i], "Bad capacity")
		case "ERROR":
			req.create.rate, msg = parseRate(args[i], "Bad error rate")
		case "EXPANSION":
			expansion, msg = parseExpansion(args[i], "Bad expansion")
		}
		if msg != "" {
			return req, msg
		}
	}
	if req.items == nil {
		return req, errArity
	}
	req.create = req.create.scaling(expansion)
	return req, ""
}
