package resp

import (
	"io"
	"strings"
)

// A readCase is a byte stream and what ReadCommand makes of it: the
// commands, then the error that ends the stream (io.EOF for a clean end).
// Cases with default limits and no AUTH are also sent to a real
// redis-server by TestAgainstRedis, which checks that Redis answers
// exactly as these commands and this error imply; they use only PING and
// ECHO, whose replies show what Redis parsed.
type readCase struct {
	name string
	in   string
	want [][]string
	err  string // the message of the final error
	lim  Limits // zero: defaults
}

func cmds(c ...[]string) [][]string { return c }
func cmd(args ...string) []string   { return args }

var (
	eof           = io.EOF.Error()
	unexpectedEOF = io.ErrUnexpectedEOF.Error()
	junk          = strings.Repeat("x", 70000) // more than MaxInline
)

var readCases = []readCase{
	// Arrays of bulk strings.
	{name: "ping", in: "*1\r\n$4\r\nPING\r\n", want: cmds(cmd("PING")), err: eof},
	{name: "pipeline", in: "*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
		want: cmds(cmd("ECHO", "abc"), cmd("PING"), cmd("ECHO", "")), err: eof},
	{name: "binary bulk", in: "*2\r\n$4\r\nECHO\r\n$7\r\na\r\n\x00b\xff\n\r\n",
		want: cmds(cmd("ECHO", "a\r\n\x00b\xff\n")), err: eof},
	{name: "lowercase", in: "*2\r\n$4\r\necho\r\n$1\r\nx\r\n", want: cmds(cmd("echo", "x")), err: eof},
	{name: "empty arrays skipped", in: "*0\r\n*-1\r\n*-10\r\n*1\r\n$4\r\nPING\r\n*0\r\n",
		want: cmds(cmd("PING")), err: eof},
	{name: "only empty arrays", in: "*0\r\n*-1\r\n", err: eof},
	{name: "bulk CRLF unchecked", in: "*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n",
		want: cmds(cmd("PING"), cmd("PING")), err: eof},
	{name: "count LF unchecked", in: "*1\rX$4\rXPING\r\n", want: cmds(cmd("PING")), err: eof},
	{name: "largest bulk declared", in: "*2\r\n$4\r\nECHO\r\n$536870912\r\nabc",
		err: unexpectedEOF},
	{name: "empty input", in: "", err: eof},

	// Inline commands.
	{name: "inline", in: "PING\r\nECHO abc\r\n", want: cmds(cmd("PING"), cmd("ECHO", "abc")), err: eof},
	{name: "inline LF only", in: "PING\nECHO\tabc  \n", want: cmds(cmd("PING"), cmd("ECHO", "abc")), err: eof},
	{name: "empty lines skipped", in: "\r\n\n  \t \r\nPING\r\n", want: cmds(cmd("PING")), err: eof},
	{name: "double quotes", in: "ECHO \"a b\"\r\n", want: cmds(cmd("ECHO", "a b")), err: eof},
	{name: "escapes", in: `ECHO "\x41\x0a\n\r\t\b\a\q\\\""` + "\r\n",
		want: cmds(cmd("ECHO", "A\n\n\r\t\b\aq\\\"")), err: eof},
	{name: "hex upper and lower", in: `ECHO "\xfF\x00"` + "\r\n", want: cmds(cmd("ECHO", "\xff\x00")), err: eof},
	{name: "short hex", in: `ECHO "\x4"` + "\r\n", want: cmds(cmd("ECHO", "x4")), err: eof},
	{name: "single quotes", in: `ECHO 'a\'b\n"c'` + "\r\n", want: cmds(cmd("ECHO", `a'b\n"c`)), err: eof},
	{name: "quote inside word", in: "ECHO a\"b c\"\r\n", want: cmds(cmd("ECHO", "ab c")), err: eof},
	{name: "empty quotes", in: "ECHO \"\"\r\n", want: cmds(cmd("ECHO", "")), err: eof},
	{name: "empty single quotes", in: "ECHO ''\r\n", want: cmds(cmd("ECHO", "")), err: eof},
	{name: "CR ends a word", in: "ECHO a\r\r\n", want: cmds(cmd("ECHO", "a")), err: eof},
	{name: "VT inside a word", in: "ECHO a\vb\r\n", want: cmds(cmd("ECHO", "a\vb")), err: eof},
	{name: "VT before a word", in: "\vECHO \fab\r\n", want: cmds(cmd("ECHO", "ab")), err: eof},
	{name: "quote then tab", in: "ECHO \"a\"\t\r\n", want: cmds(cmd("ECHO", "a")), err: eof},
	{name: "quote then VT", in: "ECHO 'a'\v\r\n", want: cmds(cmd("ECHO", "a")), err: eof},
	{name: "high bytes", in: "ECHO \xa0\xff\r\n", want: cmds(cmd("ECHO", "\xa0\xff")), err: eof},
	{name: "inline then array", in: "PING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n",
		want: cmds(cmd("PING"), cmd("ECHO", "x")), err: eof},
	{name: "inline longest line", in: strings.Repeat("A", 65535) + "\r\n",
		want: cmds(cmd(strings.Repeat("A", 65535))), err: eof,
		lim: Limits{MaxInline: 65536}},

	// Protocol errors, each after a good command to show the stream is
	// read up to the error.
	{name: "empty count", in: "PING\r\n*\r\n", want: cmds(cmd("PING")), err: MsgInvalidMultibulkLength},
	{name: "count -0", in: "*-0\r\n", err: MsgInvalidMultibulkLength},
	{name: "count +1", in: "*+1\r\n", err: MsgInvalidMultibulkLength},
	{name: "count 01", in: "*01\r\n", err: MsgInvalidMultibulkLength},
	{name: "count with space", in: "*1 \r\n", err: MsgInvalidMultibulkLength},
	{name: "count not a number", in: "*x\r\n", err: MsgInvalidMultibulkLength},
	{name: "count LF only", in: "*1\n$4\r\nPING\r\n", err: MsgInvalidMultibulkLength},
	{name: "count above int32", in: "*3000000000\r\n", err: MsgInvalidMultibulkLength},
	{name: "count above int64", in: "*99999999999999999999\r\n", err: MsgInvalidMultibulkLength},
	{name: "count above MaxArgs", in: "*3\r\n", err: MsgInvalidMultibulkLength, lim: Limits{MaxArgs: 2}},
	{name: "count at MaxArgs", in: "*2\r\n$1\r\na\r\n$1\r\nb\r\n", want: cmds(cmd("a", "b")), err: eof,
		lim: Limits{MaxArgs: 2}},
	{name: "bulk length empty", in: "*1\r\n$\r\n", err: MsgInvalidBulkLength},
	{name: "bulk length -0", in: "*1\r\n$-0\r\n", err: MsgInvalidBulkLength},
	{name: "bulk length 01", in: "*1\r\n$01\r\n", err: MsgInvalidBulkLength},
	{name: "bulk length negative", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", err: MsgInvalidBulkLength},
	{name: "bulk length -1", in: "*1\r\n$-1\r\n", err: MsgInvalidBulkLength},
	{name: "bulk length word", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", err: MsgInvalidBulkLength},
	{name: "bulk above proto-max-bulk-len", in: "*1\r\n$536870913\r\n", err: MsgInvalidBulkLength},
	{name: "bulk above MaxBulk", in: "*1\r\n$4\r\nPING\r\n", err: MsgInvalidBulkLength, lim: Limits{MaxBulk: 3}},
	{name: "expected $ got f", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", err: "Protocol error: expected '$', got 'f'"},
	{name: "array of words", in: "*1\r\nfoo\r\n", err: "Protocol error: expected '$', got 'f'"},
	{name: "expected $ got CR", in: "*1\r\n\r\n", err: "Protocol error: expected '$', got ' '"},
	{name: "expected $ got LF", in: "*1\r\n\n\r\n", err: "Protocol error: expected '$', got ' '"},
	{name: "expected $ got 0xff", in: "*1\r\n\xff\r\n", err: "Protocol error: expected '$', got '\xff'"},
	{name: "expected $ got *", in: "*2\r\n$4\r\nECHO\r\n*1\r\n", err: "Protocol error: expected '$', got '*'"},
	{name: "unbalanced double", in: "PING\r\nECHO \"ab\r\n", want: cmds(cmd("PING")), err: MsgUnbalancedQuotes},
	{name: "unbalanced single", in: "ECHO 'ab\r\n", err: MsgUnbalancedQuotes},
	{name: "text after double quote", in: "ECHO \"a\"b\r\n", err: MsgUnbalancedQuotes},
	{name: "text after single quote", in: "ECHO 'a'b\r\n", err: MsgUnbalancedQuotes},
	{name: "escaped closing quote", in: `ECHO "a\"` + "\r\n", err: MsgUnbalancedQuotes},
	{name: "backslash at end", in: `ECHO "a\` + "\r\n", err: MsgUnbalancedQuotes},
	{name: "too big inline", in: strings.Repeat("A", 17) + "\n", err: MsgTooBigInline, lim: Limits{MaxInline: 16}},
	{name: "inline at MaxInline", in: strings.Repeat("A", 16) + "\n", want: cmds(cmd(strings.Repeat("A", 16))),
		err: eof, lim: Limits{MaxInline: 16}},
	{name: "inline CR counts", in: strings.Repeat("A", 16) + "\r\n", err: MsgTooBigInline, lim: Limits{MaxInline: 16}},
	{name: "inline with CR at MaxInline", in: strings.Repeat("A", 15) + "\r\n", want: cmds(cmd(strings.Repeat("A", 15))),
		err: eof, lim: Limits{MaxInline: 16}},
	{name: "too big inline unterminated", in: "PING\r\n" + junk, want: cmds(cmd("PING")), err: MsgTooBigInline},
	{name: "too big mbulk count", in: "*" + strings.Repeat("1", 16) + "\r\n", err: MsgTooBigMbulkCount, lim: Limits{MaxInline: 16}},
	{name: "mbulk count at MaxInline", in: "*" + strings.Repeat("1", 15) + "\r\n", err: MsgInvalidMultibulkLength,
		lim: Limits{MaxInline: 16}},
	{name: "too big mbulk count unterminated", in: "*1" + junk, err: MsgTooBigMbulkCount},
	{name: "too big bulk count", in: "*1\r\n$" + strings.Repeat("1", 16) + "\r\n", err: MsgTooBigBulkCount,
		lim: Limits{MaxInline: 16}},
	{name: "short bulk count too big", in: "*1\r\n$12345\r\n", err: MsgTooBigBulkCount, lim: Limits{MaxInline: 5}},
	{name: "short bulk count at MaxInline", in: "*1\r\n$1\r\na\r\n", want: cmds(cmd("a")), err: eof, lim: Limits{MaxInline: 2}},
	{name: "too big bulk count unterminated", in: "*1\r\n$1" + junk, err: MsgTooBigBulkCount},
	{name: "too big bulk count of words", in: "*1\r\nfoo" + junk, err: MsgTooBigBulkCount},

	// A NUL byte hides the line's terminator from Redis's strchr: Redis
	// waits for more than 64 KiB, then fails.
	{name: "NUL in inline", in: "PI\x00NG\r\n" + junk, err: MsgTooBigInline},
	{name: "NUL in inline waits", in: "PING\r\nPI\x00NG\r\n", want: cmds(cmd("PING")), err: unexpectedEOF},
	{name: "NUL in count", in: "*1\x00\r\n" + junk, err: MsgTooBigMbulkCount},
	{name: "NUL in bulk count", in: "*1\r\n$4\x00\r\n" + junk, err: MsgTooBigBulkCount},
	{name: "NUL at bulk start", in: "*1\r\n\x00" + junk, err: MsgTooBigBulkCount},
	{name: "NUL after terminator", in: "*1\r\x00$4\r\x00PING\x00\x00", want: cmds(cmd("PING")), err: eof},

	// Truncated streams: Redis would wait for the rest.
	{name: "cut in count", in: "*2", err: unexpectedEOF},
	{name: "cut after count CR", in: "*2\r", err: unexpectedEOF},
	{name: "bad count waits for LF", in: "PING\r\n*x\r", want: cmds(cmd("PING")), err: unexpectedEOF},
	{name: "bad bulk header waits for LF", in: "*1\r\nfoo\r", err: unexpectedEOF},
	{name: "cut in bulk", in: "*2\r\n$4\r\nECHO\r\n$3\r\nab", err: unexpectedEOF},
	{name: "cut before bulk CRLF", in: "*1\r\n$4\r\nPING", err: unexpectedEOF},
	{name: "cut in bulk CRLF", in: "*1\r\n$4\r\nPING\r", err: unexpectedEOF},
	{name: "cut between bulks", in: "*2\r\n$4\r\nECHO\r\n", err: unexpectedEOF},
	{name: "cut in inline", in: "PING\r\nPING", want: cmds(cmd("PING")), err: unexpectedEOF},

	// The query buffer limit counts the whole command.
	{name: "query buffer", in: "*2\r\n$4\r\nECHO\r\n$20\r\n", err: ErrQueryBufferLimit.Error(),
		lim: Limits{MaxQueryBuffer: 26}},
	{name: "query buffer exact", in: "*2\r\n$4\r\nECHO\r\n$6\r\nabcdef\r\n", want: cmds(cmd("ECHO", "abcdef")),
		err: eof, lim: Limits{MaxQueryBuffer: 26}},
	{name: "query buffer by one", in: "*2\r\n$4\r\nECHO\r\n$7\r\nabcdefg\r\n", err: ErrQueryBufferLimit.Error(),
		lim: Limits{MaxQueryBuffer: 26}},
}
