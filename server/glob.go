package server

// Glob patterns of KEYS and SCAN MATCH, with Redis 7.0's semantics
// (stringmatchlen without nocase), byte by byte:
//
//   - * matches any run of bytes, ? any one byte, \x the byte x (a \ that
//     ends the pattern is itself);
//   - [...] one byte of a class: ^ first negates it, \x is x, a-b a range
//     (either order; b may be ']' or '\', and then the class goes on;
//     bytes compare as C's signed char on x86, so [\x00-\xff] is only
//     \x00 and \xff, and [\x80-\x7f] every byte), and
//     a class without its ']' takes the rest of the pattern ("[" alone
//     matches nothing, "[^" any byte);
//   - the empty string matches only the empty pattern (KEYS * and SCAN
//     MATCH * match every key: the commands treat * alone as no pattern).
//
// Every token but * matches exactly one byte, so backtracking to the last
// star is enough (a match found by moving an earlier star further is also
// found by moving the last one): the time is O(len(s)²) token steps per
// key at worst, with no exponential case. Classes of more than
// longClass bytes are decoded once into a bitmap by compileGlob, so a
// huge class costs one lookup per byte tested; shorter ones are read in
// place. compileGlob also collapses runs of stars.

// longClass is the class length from which compileGlob keeps a bitmap.
const longClass = 32

// glob is a compiled pattern.
type glob struct {
	src  string               // the pattern as given
	pat  string               // src with runs of stars collapsed
	sets map[int]*classBitmap // the long classes of pat, by position
}

// classBitmap is a decoded class: its members and where it ends.
type classBitmap struct {
	end  int
	bits [4]uint64
}

// compileGlob prepares pattern for matching; it reads it once and keeps
// at most a copy of it plus a bitmap (40 bytes) per long class.
func compileGlob(pattern string) *glob {
	g := &glob{src: pattern}
	b := make([]byte, 0, len(pattern))
	for p := 0; p < len(pattern); {
		switch pattern[p] {
		case '*':
			b = append(b, '*')
			for p < len(pattern) && pattern[p] == '*' {
				p++
			}
		case '[':
			start := len(b)
			end, _ := walkClass(pattern, p, func(lo, hi byte) {})
			if end-p > longClass {
				set := &classBitmap{end: start + end - p}
				_, not := walkClass(pattern, p, func(lo, hi byte) {
					for v := int(int8(lo)); v <= int(int8(hi)); v++ {
						c := byte(v)
						set.bits[c>>6] |= 1 << (c & 63)
					}
				})
				if not {
					for i := range set.bits {
						set.bits[i] = ^set.bits[i]
					}
				}
				if g.sets == nil {
					g.sets = map[int]*classBitmap{}
				}
				g.sets[start] = set
			}
			b = append(b, pattern[p:end]...)
			p = end
		case '\\':
			n := min(2, len(pattern)-p)
			b = append(b, pattern[p:p+n]...)
			p += n
		default:
			b = append(b, pattern[p])
			p++
		}
	}
	g.pat = string(b)
	return g
}

// globMatch reports whether s matches pattern (compiling it each time:
// for one-off matches and tests).
func globMatch(pattern, s string) bool { return compileGlob(pattern).match(s) }

// match reports whether s matches the pattern.
func (g *glob) match(s string) bool {
	pat := g.pat
	if len(s) == 0 {
		return len(pat) == 0
	}
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pat) {
			if pat[p] == '*' {
				if p+1 == len(pat) {
					return true
				}
				p++
				starP, starI = p, i
				continue
			}
			if next, ok := g.one(p, s[i]); ok {
				p, i = next, i+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP, starI
	}
	if p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// one matches byte c against the single-byte token at pat[p] (not a
// star): it returns the position after the token and whether c matches.
func (g *glob) one(p int, c byte) (int, bool) {
	pat := g.pat
	switch pat[p] {
	case '?':
		return p + 1, true
	case '[':
		if set := g.sets[p]; set != nil {
			return set.end, set.bits[c>>6]&(1<<(c&63)) != 0
		}
		in := false
		end, not := walkClass(pat, p, func(lo, hi byte) {
			if int8(lo) <= int8(c) && int8(c) <= int8(hi) {
				in = true
			}
		})
		return end, in != not
	case '\\':
		if p+1 < len(pat) {
			return p + 2, pat[p+1] == c
		}
	}
	return p + 1, pat[p] == c
}

// walkClass reads the class at pat[p] == '[' as Redis does, calling
// member for each byte range it lists (lo ≤ hi as signed bytes; one
// byte is lo == hi),
// and returns the position after the class and whether it is negated.
func walkClass(pat string, p int, member func(lo, hi byte)) (end int, not bool) {
	p++
	not = p < len(pat) && pat[p] == '^'
	if not {
		p++
	}
	for ; p < len(pat); p++ {
		switch c := pat[p]; {
		case c == '\\' && p+1 < len(pat):
			p++
			member(pat[p], pat[p])
		case c == ']':
			return p + 1, not
		case p+2 < len(pat) && pat[p+1] == '-':
			lo, hi := c, pat[p+2]
			if int8(lo) > int8(hi) {
				lo, hi = hi, lo
			}
			member(lo, hi)
			p += 2
		default:
			member(c, c)
		}
	}
	return len(pat), not // no ']': the class takes the rest of the pattern
}
