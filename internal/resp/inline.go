package resp

// splitInline splits an inline command line into arguments as Redis's
// sdssplitargs does, appending their bytes to buf and the arguments to
// args; ok is false for unbalanced quotes, or a closing quote followed by
// something other than a space.
//
// Outside quotes, arguments end at ' ', '\t', '\r' or '\n' (leading
// blanks are skipped with C's isspace, which also skips '\v' and '\f'). A
// double or single quote anywhere in an argument opens quotes. Inside
// double quotes, \xHH is a byte, \n \r \t \b \a the usual controls, and
// \ before any other byte that byte. Inside single quotes only \' is an
// escape. line holds no NUL byte (readLine sees to that), so its end is
// C's terminating NUL.
func splitInline(buf []byte, args [][]byte, line []byte) ([]byte, [][]byte, bool) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return buf, args, true
		}
		start := len(buf)
		quote := byte(0) // the open quote, if any
		for done := false; !done; {
			c := byteAt(line, i)
			if quote == 0 {
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"', '\'':
					quote = c
				default:
					buf = append(buf, c)
				}
			} else {
				switch next := byteAt(line, i+1); {
				case quote == '"' && c == '\\' && next == 'x' &&
					isHex(byteAt(line, i+2)) && isHex(byteAt(line, i+3)):
					buf = append(buf, unhex(line[i+2])<<4|unhex(line[i+3]))
					i += 3
				case quote == '"' && c == '\\' && next != 0:
					i++
					buf = append(buf, unescape(next))
				case quote == '\'' && c == '\\' && next == '\'':
					i++
					buf = append(buf, '\'')
				case c == quote:
					// A closing quote must end the argument.
					if next != 0 && !isSpace(next) {
						return buf, args, false
					}
					done = true
				case c == 0: // the line ends inside quotes
					return buf, args, false
				default:
					buf = append(buf, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		end := len(buf)
		args = append(args, buf[start:end:end])
	}
}

// byteAt returns line[i], or 0 past the end, like reading a C string.
func byteAt(line []byte, i int) byte {
	if i < len(line) {
		return line[i]
	}
	return 0
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// unescape is the byte that \c stands for inside double quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
