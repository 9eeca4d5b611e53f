// Package transcript records what a real server answers to a list of
// command sequences, and replays such a record against another server,
// comparing the replies byte for byte. Bloomery's compatibility with
// RedisBloom is checked this way: the cases are written by hand, the
// replies recorded from redis-server with a RedisBloom module, and the
// record replayed against bloomery serve in the tests (docs/SERVER.md,
// "Compatibility").
//
// # Format
//
// A text file of lines:
//
//	# a comment (also after the header of a case)
//	=== name of a case
//	> BF.ADD k "two words" {2.1} {range item: 1 100}
//	2 "+OK\r\n"
//	3 "#t\r\n"
//
// A case is a sequence of commands run on one connection, starting from
// an empty keyspace, once in RESP2 (no HELLO) and once in RESP3 (HELLO 3
// first, not recorded). A command line starts with "> " and holds its
// arguments separated by spaces; an argument is a bare word or a
// Go-quoted string. Two marks change how its replies are compared:
//
//	>@   the replies depend on RedisBloom's own filter layout (its sizes,
//	     bits and false positives): compared only by a replay that
//	     asks for that layout
//	>~   the replies hold values of the recording server's own (a
//	     version, a client id, a module path): only their shape is
//	     compared (Shape: the types, aggregate sizes and simple
//	     strings, not the integers and bulk strings)
//
// Two forms are expanded when the case runs:
//
//	{N.I}               element I (from 0) of the array reply of the
//	                    case's N-th command (from 1), as bytes: a
//	                    SCANDUMP's iterator or chunk for a LOADCHUNK
//	{range P FROM TO}   the arguments P+FROM … P+TO (decimal)
//
// The lines after a command that start with "2 " or "3 " are its reply
// in that protocol: the exact bytes, Go-quoted. RESP3 push messages (">")
// read before a reply are part of it: a push that follows the reply to
// its cause (a client-side caching invalidation of the client's own
// write) shows in the next command's reply. A file of cases only has no
// reply lines; Record fills them in.
//
// Concurrency: the functions are safe for concurrent use on different
// values. Limits: a reply bulk of at most 64 MiB, aggregates of at most
// 2^20 elements nested at most 16 deep.
package transcript

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Case is one command sequence.
type Case struct {
	Name string
	Cmds []*Cmd
	Line int // where it starts in its file
}

// Cmd is one command of a case and its recorded replies.
type Cmd struct {
	Args []Arg
	// Layout marks replies that depend on RedisBloom's own layout.
	Layout bool
	// Shape marks replies compared only by their shape.
	Shape bool
	// Replies holds the recorded reply per protocol (2, 3), exact bytes.
	Replies map[int][]byte
	Line    int
}

// Arg is one argument: a literal, a reference to an earlier reply's
// element, or a range of generated words.
type Arg struct {
	Lit []byte
	// Ref: element Elem of the array reply of command Cmd (from 1); 0
	// when the argument is not a reference.
	Cmd, Elem int
	// Range: Prefix+From … Prefix+To, when To ≥ From and IsRange.
	IsRange  bool
	Prefix   string
	From, To int64
}

// ErrSyntax reports a line Parse cannot read.
var ErrSyntax = errors.New("transcript: syntax error")

// maxRange bounds the words one {range} makes.
const maxRange = 1 << 20

// Parse reads a file of cases (with or without replies).
func Parse(r io.Reader) ([]*Case, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	var cases []*Case
	var cur *Case
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: line %d: %s", ErrSyntax, n, fmt.Sprintf(format, a...))
		}
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "=== "):
			cur = &Case{Name: strings.TrimSpace(line[4:]), Line: n}
			cases = append(cases, cur)
		case strings.HasPrefix(line, "> "), strings.HasPrefix(line, ">@ "), strings.HasPrefix(line, ">~ "):
			if cur == nil {
				return nil, bad("a command before the first case")
			}
			layout, shape := line[1] == '@', line[1] == '~'
			args, err := parseArgs(line[strings.IndexByte(line, ' ')+1:], len(cur.Cmds))
			if err != nil {
				return nil, bad("%v", err)
			}
			if len(args) == 0 {
				return nil, bad("a command without arguments")
			}
			cur.Cmds = append(cur.Cmds, &Cmd{Args: args, Layout: layout, Shape: shape, Line: n, Replies: map[int][]byte{}})
		case strings.HasPrefix(line, "2 "), strings.HasPrefix(line, "3 "):
			if cur == nil || len(cur.Cmds) == 0 {
				return nil, bad("a reply before the first command")
			}
			b, err := strconv.Unquote(line[2:])
			if err != nil {
				return nil, bad("reply: %v", err)
			}
			cur.Cmds[len(cur.Cmds)-1].Replies[int(line[0]-'0')] = []byte(b)
		default:
			return nil, bad("%q", truncate(line, 40))
		}
	}
	return cases, sc.Err()
}

// parseArgs splits a command line; before is the number of commands
// before it in its case (a reference must point to one of them).
func parseArgs(s string, before int) ([]Arg, error) {
	var args []Arg
	for s = strings.TrimLeft(s, " "); s != ""; s = strings.TrimLeft(s, " ") {
		var a Arg
		var err error
		switch s[0] {
		case '"':
			var tok string
			if tok, err = strconv.QuotedPrefix(s); err == nil {
				var lit string
				lit, err = strconv.Unquote(tok)
				a.Lit, s = []byte(lit), s[len(tok):]
			}
		case '{':
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return nil, fmt.Errorf("unclosed {")
			}
			a, err = parseExpansion(s[1:end], before)
			s = s[end+1:]
		default:
			end := strings.IndexByte(s, ' ')
			if end < 0 {
				end = len(s)
			}
			a.Lit, s = []byte(s[:end]), s[end:]
		}
		if err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	return args, nil
}

// parseExpansion reads "N.I" or "range P FROM TO".
func parseExpansion(s string, before int) (Arg, error) {
	if f := strings.Fields(s); len(f) == 4 && f[0] == "range" {
		from, err1 := strconv.ParseInt(f[2], 10, 64)
		to, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || to < from || to-from >= maxRange {
			return Arg{}, fmt.Errorf("bad range {%s}", s)
		}
		return Arg{IsRange: true, Prefix: f[1], From: from, To: to}, nil
	}
	c, e, ok := strings.Cut(s, ".")
	cmd, err1 := strconv.Atoi(c)
	elem, err2 := strconv.Atoi(e)
	if !ok || err1 != nil || err2 != nil || cmd < 1 || cmd > before || elem < 0 {
		return Arg{}, fmt.Errorf("bad reference {%s}: want {N.I}, N an earlier command of the case", s)
	}
	return Arg{Cmd: cmd, Elem: elem}, nil
}

// Write writes cases in the format Parse reads, with their replies.
func Write(w io.Writer, header string, cases []*Case) error {
	bw := bufio.NewWriter(w)
	for _, l := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		fmt.Fprintf(bw, "# %s\n", l)
	}
	for _, c := range cases {
		fmt.Fprintf(bw, "\n=== %s\n", c.Name)
		for _, cmd := range c.Cmds {
			mark := ">"
			switch {
			case cmd.Layout:
				mark = ">@"
			case cmd.Shape:
				mark = ">~"
			}
			fmt.Fprintf(bw, "%s %s\n", mark, cmd.String())
			for _, proto := range []int{2, 3} {
				if r, ok := cmd.Replies[proto]; ok {
					fmt.Fprintf(bw, "%d %s\n", proto, strconv.Quote(string(r)))
				}
			}
		}
	}
	return bw.Flush()
}

// String is the command line as Parse reads it.
func (c *Cmd) String() string {
	var parts []string
	for _, a := range c.Args {
		switch {
		case a.IsRange:
			parts = append(parts, fmt.Sprintf("{range %s %d %d}", a.Prefix, a.From, a.To))
		case a.Cmd > 0:
			parts = append(parts, fmt.Sprintf("{%d.%d}", a.Cmd, a.Elem))
		default:
			parts = append(parts, word(a.Lit))
		}
	}
	return strings.Join(parts, " ")
}

// word is b bare when Parse reads it back as the same bytes, else quoted.
func word(b []byte) string {
	s := string(b)
	if s == "" || strings.ContainsAny(s, " \"{\t\r\n\\") || strconv.Quote(s) != `"`+s+`"` {
		return strconv.Quote(s)
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
