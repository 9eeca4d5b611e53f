package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// The pre-scan (Complete) against the parser: fed the same bytes in any
// pieces, an event loop that calls ReadCommand only when Complete says so
// must read exactly what a blocking Reader reads, end with the same error,
// and never wait for bytes a blocking Reader would not need.

// loopResult is what an event loop made of a stream: the commands, and
// the error that ended it (nil: it is waiting for more).
type loopResult struct {
	cmds [][]string
	err  error
}

// readAsLoop feeds data to a Reader over a Buffer in the pieces sizes
// gives (cycled), calling ReadCommand whenever Complete reports true.
// Whenever Complete reports false it checks, with a blocking Reader over
// the unread bytes (up to checkUnread of them, to keep it quick), that
// they indeed hold no whole command and no error.
func readAsLoop(t *testing.T, data []byte, sizes []int, lim Limits, auth bool) loopResult {
	t.Helper()
	var in Buffer
	r := NewBufferReader(&in, lim)
	r.SetAuthRequired(auth)
	var res loopResult
	var args [][]byte
	for i, at := 0, 0; at < len(data); i++ {
		k := min(max(sizes[i%len(sizes)], 1), len(data)-at)
		copy(in.Space(k), data[at:at+k])
		in.Commit(k)
		at += k
		for r.Complete() {
			var err error
			if args, err = r.ReadCommand(args); err != nil {
				res.err = err
				return res
			}
			res.cmds = append(res.cmds, strs(args))
		}
		unread, _ := in.Peek(in.Len())
		if len(unread) > checkUnread {
			continue
		}
		if got := blockingRead(bytes.Clone(unread), lim, auth); len(got.cmds) > 0 || !waiting(got.err) {
			t.Fatalf("Complete is false on %q, where a blocking Reader reads %q then %v", unread, got.cmds, got.err)
		}
	}
	return res
}

const checkUnread = 4096

// blockingRead reads data with a Reader over a bufio.Reader, as a
// goroutine per connection does.
func blockingRead(data []byte, lim Limits, auth bool) loopResult {
	r := NewReader(bufio.NewReaderSize(bytes.NewReader(data), 4096), lim)
	r.SetAuthRequired(auth)
	var res loopResult
	var args [][]byte
	for {
		var err error
		if args, err = r.ReadCommand(args); err != nil {
			res.err = err
			return res
		}
		res.cmds = append(res.cmds, strs(args))
	}
}

// waiting reports an end of input that a loop sees as waiting for more.
func waiting(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// sameEnd reports whether the loop ended as the blocking Reader did.
func sameEnd(loop, blocking error) bool {
	if waiting(blocking) {
		return loop == nil
	}
	var lp, bp *ProtocolError
	if errors.As(loop, &lp) && errors.As(blocking, &bp) {
		return lp.Error() == bp.Error()
	}
	return loop == blocking
}

func checkAsLoop(t *testing.T, data []byte, sizes []int, lim Limits, auth bool) {
	t.Helper()
	want := blockingRead(data, lim, auth)
	got := readAsLoop(t, data, sizes, lim, auth)
	if !reflect.DeepEqual(got.cmds, want.cmds) || !sameEnd(got.err, want.err) {
		t.Fatalf("%q in pieces of %v:\nloop:     %q, %v\nblocking: %q, %v", data, sizes, got.cmds, got.err, want.cmds, want.err)
	}
}

// TestCompleteCases runs every case of the parser's table through the
// loop, whole, a byte at a time, and in uneven pieces.
func TestCompleteCases(t *testing.T) {
	for _, tc := range readCases {
		for _, sizes := range [][]int{{len(tc.in)}, {1}, {3, 7, 1, 64}} {
			checkAsLoop(t, []byte(tc.in), sizes, tc.lim, false)
		}
	}
}

// TestCompleteEarly: Complete decides as soon as ReadCommand would, not
// when the next command arrives.
func TestCompleteEarly(t *testing.T) {
	small := Limits{MaxBulk: 100, MaxArgs: 4, MaxInline: 32, MaxQueryBuffer: 1 << 10}
	for _, c := range []struct {
		name, in string
		lim      Limits
		auth     bool
		want     bool
	}{
		{"nothing", "", Limits{}, false, false},
		{"count line without its last byte", "*1\r", Limits{}, false, false},
		{"bad count judged with the byte after \\r", "*x\r\n", Limits{}, false, true},
		{"bad count waits for that byte", "*x\r", Limits{}, false, false},
		{"too many arguments", "*5\r\n", small, false, true},
		{"unauthenticated", "*11\r\n", Limits{}, true, true},
		{"bulk over MaxBulk before its bytes", "*1\r\n$101\r\n", small, false, true},
		{"bulk header only", "*1\r\n$4\r\n", Limits{}, false, false},
		{"bulk without its CRLF", "*1\r\n$4\r\nPING", Limits{}, false, false},
		{"bulk whole", "*1\r\n$4\r\nPING\r\n", Limits{}, false, true},
		{"query buffer passed by a declared bulk", "*1\r\n$100\r\n", Limits{MaxBulk: 100, MaxQueryBuffer: 64}, false, true},
		{"inline", "PING\r\n", Limits{}, false, true},
		{"inline without LF", "PING\r", Limits{}, false, false},
		{"long inline", string(bytes.Repeat([]byte("a"), 33)), small, false, true},
		{"blank lines then half a command", "\r\n \r\n*0\r\n*1\r\n$4\r\nPI", Limits{}, false, false},
		{"NUL waits for MaxInline bytes", "PI\x00NG\r\n", small, false, false},
		{"NUL with MaxInline bytes", "PI\x00NG\r\n" + string(bytes.Repeat([]byte("x"), 30)), small, false, true},
		{"unbalanced quotes", "ECHO \"a\r\n", Limits{}, false, true},
	} {
		var in Buffer
		copy(in.Space(len(c.in)), c.in)
		in.Commit(len(c.in))
		r := NewBufferReader(&in, c.lim)
		r.SetAuthRequired(c.auth)
		if got := r.Complete(); got != c.want {
			t.Errorf("%s: Complete on %q = %v, want %v", c.name, c.in, got, c.want)
		}
		checkAsLoop(t, []byte(c.in), []int{1}, c.lim, c.auth)
	}
}

// TestBufferArgsNotCopied: bulk strings read from a Buffer point into it.
func TestBufferArgsNotCopied(t *testing.T) {
	var in Buffer
	const msg = "*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n"
	copy(in.Space(len(msg)), msg)
	in.Commit(len(msg))
	r := NewBufferReader(&in, Limits{})
	if !r.Complete() {
		t.Fatal("Complete is false on a whole command")
	}
	args, err := r.ReadCommand(nil)
	if err != nil || len(args) != 2 || string(args[1]) != "hello" {
		t.Fatalf("ReadCommand: %q, %v", args, err)
	}
	if &args[1][0] != &in.b[len(msg)-7] {
		t.Error("the argument was copied out of the Buffer")
	}
	if allocs := testing.AllocsPerRun(100, func() {
		copy(in.Space(len(msg)), msg)
		in.Commit(len(msg))
		r.Complete()
		args, _ = r.ReadCommand(args)
	}); allocs != 0 {
		t.Errorf("%.1f allocations per command read from a Buffer, want 0", allocs)
	}
}

// FuzzComplete compares the event loop's reading (Complete, then
// ReadCommand) with a blocking Reader on arbitrary bytes cut in arbitrary
// pieces, with small limits and with or without authentication pending.
func FuzzComplete(f *testing.F) {
	for _, tc := range readCases {
		if len(tc.in) <= 1000 {
			f.Add([]byte(tc.in), uint64(len(tc.in)), false)
		}
	}
	f.Add([]byte(madd(10)), uint64(0x0307010203), false)
	f.Add([]byte("*12\r\n$4\r\nAUTH\r\n"), uint64(1), true)
	f.Add([]byte("*1\r\n$20000\r\nabc"), uint64(5), true)
	f.Add([]byte("PI\x00NG\r\n*1\r\n"), uint64(2), false)
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, auth bool) {
		var sizes []int
		for s := seed; s != 0 && len(sizes) < 8; s >>= 8 {
			sizes = append(sizes, int(s&0xff))
		}
		if len(sizes) == 0 {
			sizes = []int{len(data)}
		}
		checkAsLoop(t, data, sizes, fuzzLimits, auth)
	})
}
