package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads commands until an error and returns them, copied, with
// that error. It passes each result back as dst, as a server does.
func readAll(r *Reader) ([][]string, error) {
	var got [][]string
	var args [][]byte
	for {
		var err error
		args, err = r.ReadCommand(args)
		if err != nil {
			if len(args) != 0 {
				panic("ReadCommand returned arguments with an error")
			}
			return got, err
		}
		c := make([]string, len(args))
		for i, a := range args {
			c[i] = string(a)
		}
		got = append(got, c)
	}
}

// readModes feed a case to the Reader in different pieces, through
// bufio.Readers of different sizes (16 is bufio's least).
var readModes = []struct {
	name string
	wrap func(io.Reader) io.Reader
	size int
}{
	{"whole/4096", func(r io.Reader) io.Reader { return r }, 4096},
	{"whole/16", func(r io.Reader) io.Reader { return r }, 16},
	{"bytes/16", iotest.OneByteReader, 16},
	{"bytes/4096", iotest.OneByteReader, 4096},
	{"halves/64", iotest.HalfReader, 64},
}

func checkCase(t *testing.T, tc readCase, src io.Reader, size int) {
	t.Helper()
	r := NewReader(bufio.NewReaderSize(src, size), tc.lim)
	got, err := readAll(r)
	if !reflect.DeepEqual(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
		t.Errorf("commands = %q, want %q", got, tc.want)
	}
	if err.Error() != tc.err {
		t.Errorf("error = %q, want %q", err, tc.err)
	}
	var pe *ProtocolError
	if isProto := strings.HasPrefix(tc.err, "Protocol error: "); errors.As(err, &pe) != isProto {
		t.Errorf("error %q is a *ProtocolError: %v, want %v", err, !isProto, isProto)
	}
	if tc.err == unexpectedEOF && err != io.ErrUnexpectedEOF || tc.err == eof && err != io.EOF {
		t.Errorf("error %#v is not the io value", err)
	}
}

func TestReadCommand(t *testing.T) {
	for _, tc := range readCases {
		for _, m := range readModes {
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				checkCase(t, tc, m.wrap(strings.NewReader(tc.in)), m.size)
			})
		}
	}
}

// TestReadCommandSplits cuts every short case at every byte boundary.
func TestReadCommandSplits(t *testing.T) {
	for _, tc := range readCases {
		if len(tc.in) > 300 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			for k := 0; k <= len(tc.in); k++ {
				src := io.MultiReader(strings.NewReader(tc.in[:k]), strings.NewReader(tc.in[k:]))
				checkCase(t, tc, src, 16)
				if t.Failed() {
					t.Fatalf("split at %d of %q", k, tc.in)
				}
			}
		})
	}
}

func TestReadCommandPipelineSplits(t *testing.T) {
	// All the good cases back to back, as one pipeline, one byte at a time.
	var in strings.Builder
	var want [][]string
	for _, tc := range readCases {
		if tc.err == eof && tc.lim == (Limits{}) {
			in.WriteString(tc.in)
			want = append(want, tc.want...)
		}
	}
	checkCase(t, readCase{in: in.String(), want: want, err: eof},
		iotest.OneByteReader(strings.NewReader(in.String())), 16)
}

// authCases are read by a Reader with SetAuthRequired(true); Redis with a
// password answers each of their commands with NOAUTH.
var authCases = []readCase{
	{in: "*10\r\n$3\r\nDEL\r\n" + strings.Repeat("$1\r\na\r\n", 9), want: cmds(append(cmd("DEL"), strings.Split(strings.Repeat("a", 9), "")...)), err: eof},
	{in: "*11\r\n", err: MsgUnauthMultibulkLength},
	{in: "*11x\r\n", err: MsgInvalidMultibulkLength},
	{in: "*-5\r\n*1\r\n$4\r\nPING\r\n", want: cmds(cmd("PING")), err: eof},
	{in: "*2\r\n$4\r\nECHO\r\n$16384\r\n" + strings.Repeat("a", 16384) + "\r\n", want: cmds(cmd("ECHO", strings.Repeat("a", 16384))), err: eof},
	{in: "*2\r\n$4\r\nECHO\r\n$16385\r\n", err: MsgUnauthBulkLength},
	{in: "*1\r\n$-1\r\n", err: MsgInvalidBulkLength},
	{in: "DEL " + strings.Repeat("a ", 20) + "\r\n", want: cmds(append(cmd("DEL"), strings.Split(strings.Repeat("a", 20), "")...)), err: eof},
}

func TestAuthRequired(t *testing.T) {
	for _, tc := range authCases {
		r := NewReader(bufio.NewReader(strings.NewReader(tc.in)), Limits{})
		r.SetAuthRequired(true)
		got, err := readAll(r)
		if !reflect.DeepEqual(got, tc.want) || err.Error() != tc.err {
			t.Errorf("%.30q: got %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	// Once authenticated, the usual limits apply.
	r := NewReader(bufio.NewReader(strings.NewReader("*11\r\n"+strings.Repeat("$1\r\na\r\n", 11))), Limits{})
	r.SetAuthRequired(true)
	r.SetAuthRequired(false)
	if args, err := r.ReadCommand(nil); err != nil || len(args) != 11 {
		t.Errorf("after auth: %q, %v", args, err)
	}
}

func TestOffset(t *testing.T) {
	in := "PING\r\n*0\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$5\r\nab"
	r := NewReader(bufio.NewReaderSize(strings.NewReader(in), 16), Limits{})
	var offs []int64
	for {
		_, err := r.ReadCommand(nil)
		offs = append(offs, r.Offset())
		if err != nil {
			if err != io.ErrUnexpectedEOF {
				t.Fatal(err)
			}
			break
		}
	}
	// The empty array is taken with the command after it.
	if want := []int64{6, 24, 24}; !reflect.DeepEqual(offs, want) {
		t.Errorf("offsets %v, want %v", offs, want)
	}
}

// failingReader returns its data, then err.
type failingReader struct {
	data string
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.data == "" {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReaderErrorsPassThrough(t *testing.T) {
	errNet := errors.New("i/o timeout")
	for _, in := range []string{"", "PING\r\n", "PING", "*1\r\n$4\r\nPI", "*1\r\n$4\r\n"} {
		r := NewReader(bufio.NewReader(&failingReader{in, errNet}), Limits{})
		_, err := readAll(r)
		if err != errNet {
			t.Errorf("%q: error %v, want %v", in, err, errNet)
		}
	}
}

func TestLimitsDefaults(t *testing.T) {
	r := NewReader(bufio.NewReader(strings.NewReader("")), Limits{MaxArgs: -1, MaxInline: 100})
	got := r.Limits()
	want := Limits{MaxBulk: 512 << 20, MaxArgs: 1 << 20, MaxInline: 100, MaxQueryBuffer: 1 << 30}
	if got != want {
		t.Errorf("limits %+v, want %+v", got, want)
	}
	huge := Limits{MaxArgs: math.MaxInt, MaxBulk: 1<<63 - 1, MaxQueryBuffer: 1<<63 - 1}.withDefaults()
	if huge.MaxArgs != 1<<31-1 || huge.MaxBulk != min(1<<60, math.MaxInt/2) || huge.MaxQueryBuffer != 1<<60 {
		t.Errorf("caps: %+v", huge)
	}
}

func TestParseInt(t *testing.T) {
	good := map[string]int64{
		"0": 0, "1": 1, "-1": -1, "10": 10, "1234567890": 1234567890,
		"9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63,
	}
	for s, want := range good {
		if got, ok := parseInt([]byte(s)); !ok || got != want {
			t.Errorf("parseInt(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "-0", "00", " 1", "1 ", "1x", "x", "0x10", "1e3",
		"9223372036854775808", "-9223372036854775809", "18446744073709551616", "99999999999999999999",
		"000000000000000000001"} {
		if got, ok := parseInt([]byte(s)); ok {
			t.Errorf("parseInt(%q) = %d, want failure", s, got)
		}
	}
}

// TestDeclaredLengthNotPaidUpFront declares a 500 MB argument and sends a
// little of it: the Reader must allocate about what came, not what was
// announced.
func TestDeclaredLengthNotPaidUpFront(t *testing.T) {
	const sent = 1 << 20
	in := "*3\r\n$4\r\nECHO\r\n$1\r\na\r\n$500000000\r\n" + strings.Repeat("z", sent)
	r := NewReader(bufio.NewReader(strings.NewReader(in)), Limits{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := r.ReadCommand(nil)
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("error %v, want unexpected EOF", err)
	}
	if c := cap(r.buf); c > 2*sent+growChunk {
		t.Errorf("buffer of %d bytes for %d received", c, sent)
	}
	// Growth by doubling copies: allow 4 times what came, far below 500 MB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*sent+(1<<20) {
		t.Errorf("allocated %d bytes for %d received", alloc, sent)
	}
}

func TestLargeArguments(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789"), 50_000)
	var b bytes.Buffer
	w := NewWriter(&b)
	for range 3 {
		w.WriteCommand([][]byte{[]byte("SET"), []byte("k"), big, []byte("x")})
	}
	w.Flush()
	r := NewReader(bufio.NewReader(iotest.HalfReader(&b)), Limits{})
	var args [][]byte
	for range 3 {
		var err error
		if args, err = r.ReadCommand(args); err != nil {
			t.Fatal(err)
		}
		if len(args) != 4 || string(args[0]) != "SET" || string(args[1]) != "k" ||
			!bytes.Equal(args[2], big) || string(args[3]) != "x" {
			t.Fatalf("large command read wrongly")
		}
		// Arguments do not share capacity: appending to one cannot
		// overwrite the next.
		if cap(args[1]) != len(args[1]) {
			t.Errorf("argument capacity %d, length %d", cap(args[1]), len(args[1]))
		}
	}
}

// TestRelease checks that a connection going idle after a large command
// gives its large buffer back.
func TestRelease(t *testing.T) {
	in := "*2\r\n$4\r\nECHO\r\n$200000\r\n" + strings.Repeat("a", 200000) + "\r\n"
	// The pipe delivers the second command only after the first is read.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(in))
		pw.Write([]byte("PING\r\n"))
		pw.Close()
	}()
	r := NewReader(bufio.NewReader(pr), Limits{})
	if _, err := r.ReadCommand(nil); err != nil {
		t.Fatal(err)
	}
	if cap(r.buf) < 200000 {
		t.Fatalf("buffer %d", cap(r.buf))
	}
	if _, err := r.ReadCommand(nil); err != nil {
		t.Fatal(err)
	}
	if c := cap(r.buf); c > retainBytes {
		t.Errorf("kept a buffer of %d bytes while idle", c)
	}
}

// loopReader serves data over and over, for steady-state measurements.
type loopReader struct {
	data []byte
	pos  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.pos:])
	l.pos = (l.pos + n) % len(l.data)
	return n, nil
}

func TestReadCommandAllocs(t *testing.T) {
	for _, in := range []string{
		madd(100),
		"*1\r\n$4\r\nPING\r\n",
		"ECHO \"a b\" c 'd'\r\n",
		"*2\r\n$4\r\nECHO\r\n$40000\r\n" + strings.Repeat("a", 40000) + "\r\n",
	} {
		r := NewReader(bufio.NewReaderSize(&loopReader{data: []byte(in)}, 16<<10), Limits{})
		var args [][]byte
		read := func() {
			var err error
			if args, err = r.ReadCommand(args); err != nil {
				t.Fatal(err)
			}
		}
		read()
		if n := testing.AllocsPerRun(1000, read); n != 0 {
			t.Errorf("%.30q: %v allocations per command", in, n)
		}
	}
}

// madd is a BF.MADD of n items as a client sends it.
func madd(n int) string {
	var b bytes.Buffer
	w := NewWriter(&b)
	args := [][]byte{[]byte("BF.MADD"), []byte("filter:{user}:seen")}
	for i := range n {
		args = append(args, []byte("item:"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+"-0000"))
	}
	w.WriteCommand(args)
	w.Flush()
	return b.String()
}
