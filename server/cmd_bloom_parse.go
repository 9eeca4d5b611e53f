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
	rate, ok := parseFloat(args[2])
	if !ok {
		return o, "ERR bad error rate"
	}
	if !(rate > 0 && rate < 1) {
		return o, "ERR error rate must be in the range (0.000000, 1.000000)"
	}
	o.rate = min(rate, maxErrorRate)
	capacity, ok := parseInt(args[3])
	if !ok {
		return o, "ERR bad capacity"
	}
	if capacity < 1 || capacity > maxCapacity {
		return o, "ERR capacity must be in the range [1, 1073741824]"
	}
	o.capacity = uint64(capacity)
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
			if expansion, ok = parseInt(args[i]); !ok {
				return o, "ERR bad expansion"
			}
			if expansion < 0 || expansion > maxExpansion {
				return o, "ERR expansion must be in the range [0, 32768]"
			}
			hasExpansion = true
		}
	}
	if o.nonScaling && hasExpansion && expansion != 0 {
		return o, "Nonscaling filters cannot expand"
	}
	return o.scaling(expansion), ""
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
		switch word {
		case "CAPACITY":
			c, ok := parseInt(args[i])
			if !ok {
				return req, "Bad capacity"
			}
			if c < 1 || c > maxCapacity {
				return req, "ERR capacity must be in the range [1, 1073741824]"
			}
			req.create.capacity = uint64(c)
		case "ERROR":
			e, ok := parseFloat(args[i])
			if !ok {
				return req, "Bad error rate"
			}
			if !(e > 0 && e < 1) {
				return req, "ERR error rate must be in the range (0.000000, 1.000000)"
			}
			req.create.rate = min(e, maxErrorRate)
		case "EXPANSION":
			x, ok := parseInt(args[i])
			if !ok {
				return req, "Bad expansion"
			}
			if x < 0 || x > maxExpansion {
				return req, "ERR expansion must be in the range [0, 32768]"
			}
			expansion = x
		}
	}
	if req.items == nil {
		return req, errArity
	}
	req.create = req.create.scaling(expansion)
	return req, ""
}
