package server

// globMatch reports whether s matches the Redis glob pattern (KEYS, SCAN
// MATCH): * any run, ? one byte, [abc] [^abc] [a-z] classes, \x escapes x.
// Bytes, not runes, as Redis does. Backtracking is bounded by remembering
// only the last star, so the time is O(len(pattern)·len(s)).
func globMatch(pattern, s string) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch c := pattern[p]; c {
			case '*':
				starP, starI = p, i
				p++
				continue
			case '?':
				p++
				i++
				continue
			case '[':
				if np, ok := matchClass(pattern, p, s[i]); np > 0 {
					if ok {
						p, i = np, i+1
						continue
					}
				} else if s[i] == '[' { // unterminated class: a literal '['
					p++
					i++
					continue
				}
			case '\\':
				if p+1 < len(pattern) {
					if pattern[p+1] == s[i] {
						p, i = p+2, i+1
						continue
					}
					break
				}
				fallthrough
			default:
				if c == s[i] {
					p++
					i++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP+1, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchClass matches b against the class starting at pattern[p] == '['.
// It returns the index after the closing ']' (0 if there is none) and
// whether b is in the class.
func matchClass(pattern string, p int, b byte) (int, bool) {
	p++
	neg := p < len(pattern) && pattern[p] == '^'
	if neg {
		p++
	}
	in := false
	for first := true; p < len(pattern); first = false {
		c := pattern[p]
		if c == ']' && !first {
			return p + 1, in != neg
		}
		if c == '\\' && p+1 < len(pattern) {
			p++
			c = pattern[p]
		}
		if p+2 < len(pattern) && pattern[p+1] == '-' && pattern[p+2] != ']' {
			lo, hi := c, pattern[p+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if b >= lo && b <= hi {
				in = true
			}
			p += 3
			continue
		}
		if c == b {
			in = true
		}
		p++
	}
	return 0, false
}
