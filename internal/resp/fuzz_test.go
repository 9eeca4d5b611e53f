package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"testing/iotest"
)

// fuzzLimits are small, so that the fuzzer reaches every limit.
var fuzzLimits = Limits{MaxBulk: 1 << 16, MaxArgs: 1 << 10, MaxInline: 1 << 10, MaxQueryBuffer: 1 << 17}

type fuzzResult struct {
	cmds [][]string
	err  error
}

// fuzzRead reads every command of data and checks what must hold of each:
// at least one argument, no more argument bytes than were sent, a buffer
// within its bound, and a re-encoding that reads back the same.
func fuzzRead(t *testing.T, src io.Reader, size, total int) fuzzResult {
	r := NewReader(bufio.NewReaderSize(src, size), fuzzLimits)
	var res fuzzResult
	var args [][]byte
	for {
		var err error
		args, err = r.ReadCommand(args)
		// The argument buffer never runs far ahead of the input.
		if c := cap(r.buf); c > 2*total+growChunk+growMin {
			t.Fatalf("argument buffer of %d bytes for %d bytes of input", c, total)
		}
		if r.Offset() > int64(total) {
			t.Fatalf("offset %d past the %d bytes of input", r.Offset(), total)
		}
		if err != nil {
			var pe *ProtocolError
			if err != io.EOF && err != io.ErrUnexpectedEOF && err != ErrQueryBufferLimit && !errors.As(err, &pe) {
				t.Fatalf("unexpected error %v", err)
			}
			res.err = err
			return res
		}
		if len(args) == 0 {
			t.Fatal("a command without arguments")
		}
		n := 0
		c := make([]string, len(args))
		for i, a := range args {
			n += len(a)
			c[i] = string(a)
		}
		if n > total {
			t.Fatalf("%d bytes of arguments from %d bytes of input", n, total)
		}
		res.cmds = append(res.cmds, c)
		checkReencoded(t, args)
	}
}

// checkReencoded writes args as an array and reads it back.
func checkReencoded(t *testing.T, args [][]byte) {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.WriteCommand(args)
	w.Flush()
	r := NewReader(bufio.NewReader(&b), Limits{})
	back, err := r.ReadCommand(nil)
	if err != nil {
		t.Fatalf("re-encoded %q: %v", args, err)
	}
	if len(back) != len(args) {
		t.Fatalf("re-encoded %q read back as %q", args, back)
	}
	for i := range args {
		if !bytes.Equal(back[i], args[i]) {
			t.Fatalf("re-encoded %q read back as %q", args, back)
		}
	}
	if _, err := r.ReadCommand(back); err != io.EOF {
		t.Fatalf("re-encoded %q: then %v", args, err)
	}
}

// FuzzReadCommand feeds arbitrary bytes to a Reader: it must not panic,
// must stay within its memory bound, must give what it parses back
// identically after re-encoding, and must parse the same whether the
// bytes come all at once or one at a time.
func FuzzReadCommand(f *testing.F) {
	for _, tc := range readCases {
		if len(tc.in) <= 1000 {
			f.Add([]byte(tc.in))
		}
	}
	for _, s := range []string{
		madd(10),
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$70000\r\nabc",
		"*1\r\n$65536\r\n",
		"*2000\r\n",
		"ECHO \"\\x\" '\\'' \"a\\\"\"\r\n",
		"\x00\r\n",
		"*1\r\n$1\r\n\x00\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := fuzzRead(t, bytes.NewReader(data), 4096, len(data))
		bytewise := fuzzRead(t, iotest.OneByteReader(bytes.NewReader(data)), 16, len(data))
		if !reflect.DeepEqual(whole, bytewise) {
			t.Fatalf("all at once: %q, %v\none byte at a time: %q, %v",
				whole.cmds, whole.err, bytewise.cmds, bytewise.err)
		}
	})
}
