package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
)

func TestWriterGolden(t *testing.T) {
	cases := []struct {
		name       string
		write      func(w *Writer)
		resp2, re3 string
	}{
		{"simple", func(w *Writer) { w.SimpleString("OK") }, "+OK\r\n", "+OK\r\n"},
		{"simple newline", func(w *Writer) { w.SimpleString("a\r\nb\n") }, "+a  b \r\n", "+a  b \r\n"},
		{"error", func(w *Writer) { w.Error("ERR bad error rate") }, "-ERR bad error rate\r\n", "-ERR bad error rate\r\n"},
		{"error newline", func(w *Writer) { w.Error("ERR a\nb\r") }, "-ERR a b \r\n", "-ERR a b \r\n"},
		{"integer", func(w *Writer) { w.Integer(1) }, ":1\r\n", ":1\r\n"},
		{"integer negative", func(w *Writer) { w.Integer(math.MinInt64) }, ":-9223372036854775808\r\n", ":-9223372036854775808\r\n"},
		{"bulk", func(w *Writer) { w.Bulk([]byte("a\r\nb")) }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"bulk nil", func(w *Writer) { w.Bulk(nil) }, "$0\r\n\r\n", "$0\r\n\r\n"},
		{"bulk string", func(w *Writer) { w.BulkString("Capacity") }, "$8\r\nCapacity\r\n", "$8\r\nCapacity\r\n"},
		{"verbatim", func(w *Writer) { w.Verbatim("txt", []byte("# Server\r\n")) },
			"$10\r\n# Server\r\n\r\n", "=14\r\ntxt:# Server\r\n\r\n"},
		{"null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"null array", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
		{"array", func(w *Writer) { w.ArrayHeader(2); w.Integer(1); w.Integer(0) }, "*2\r\n:1\r\n:0\r\n", "*2\r\n:1\r\n:0\r\n"},
		{"empty array", func(w *Writer) { w.ArrayHeader(0) }, "*0\r\n", "*0\r\n"},
		{"map", func(w *Writer) {
			w.MapHeader(2)
			w.BulkString("Capacity")
			w.Integer(100)
			w.BulkString("Expansion rate")
			w.Null()
		}, "*4\r\n$8\r\nCapacity\r\n:100\r\n$14\r\nExpansion rate\r\n$-1\r\n",
			"%2\r\n$8\r\nCapacity\r\n:100\r\n$14\r\nExpansion rate\r\n_\r\n"},
		{"set", func(w *Writer) { w.SetHeader(2); w.BulkString("on"); w.BulkString("optin") },
			"*2\r\n$2\r\non\r\n$5\r\noptin\r\n", "~2\r\n$2\r\non\r\n$5\r\noptin\r\n"},
		{"push", func(w *Writer) { w.PushHeader(2); w.BulkString("invalidate"); w.NullArray() },
			">2\r\n$10\r\ninvalidate\r\n*-1\r\n", ">2\r\n$10\r\ninvalidate\r\n_\r\n"},
		{"bool true", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n"},
		{"bool false", func(w *Writer) { w.Bool(false) }, ":0\r\n", "#f\r\n"},
		{"double", func(w *Writer) { w.Double(0.1) }, "$19\r\n0.10000000000000001\r\n", ",0.10000000000000001\r\n"},
		{"double integral", func(w *Writer) { w.Double(100) }, "$3\r\n100\r\n", ",100\r\n"},
		{"double inf", func(w *Writer) { w.Double(math.Inf(1)) }, "$3\r\ninf\r\n", ",inf\r\n"},
		{"double -inf", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"double nan", func(w *Writer) { w.Double(math.NaN()) }, "$3\r\nnan\r\n", ",nan\r\n"},
		{"command", func(w *Writer) { w.WriteCommand([][]byte{[]byte("BF.ADD"), []byte("k"), {}}) },
			"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$0\r\n\r\n", "*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$0\r\n\r\n"},
	}
	for _, tc := range cases {
		for _, v := range []struct {
			proto int
			want  string
		}{{2, tc.resp2}, {3, tc.re3}} {
			var b bytes.Buffer
			w := NewWriter(&b)
			w.SetProtocol(v.proto)
			tc.write(w)
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if b.String() != v.want {
				t.Errorf("%s, RESP%d: %q, want %q", tc.name, v.proto, b.String(), v.want)
			}
		}
	}
}

// TestDoubleFormat compares with glibc's printf("%.17g"), as printed by a
// C program for these values.
func TestDoubleFormat(t *testing.T) {
	cases := map[float64]string{
		0.1: "0.10000000000000001", 1.5: "1.5", 100: "100", 1e16: "10000000000000000",
		1e17: "1e+17", 1e-5: "1.0000000000000001e-05", 0.0001: "0.0001",
		123456789012345680: "1.2345678901234568e+17", math.Copysign(0, -1): "-0", 0: "0",
		2.5e-300: "2.5e-300", 1e300: "1.0000000000000001e+300", 3.14159: "3.1415899999999999",
		0.3: "0.29999999999999999", 1.0 / 3: "0.33333333333333331", 1 << 63: "9.2233720368547758e+18",
		1e21: "1e+21", 5e-324: "4.9406564584124654e-324", math.MaxFloat64: "1.7976931348623157e+308",
		0.5: "0.5", 12345.678: "12345.678", 0.01: "0.01", -2: "-2",
	}
	for f, want := range cases {
		if got := string(appendDouble(nil, f)); got != want {
			t.Errorf("%v: %q, want %q", f, got, want)
		}
	}
	if got := string(appendDouble(nil, math.Copysign(math.NaN(), -1))); got != "-nan" {
		t.Errorf("negative NaN: %q", got)
	}
}

func TestWriterProtocol(t *testing.T) {
	w := NewWriter(io.Discard)
	if w.Protocol() != 2 {
		t.Errorf("starts with RESP%d", w.Protocol())
	}
	w.SetProtocol(3)
	if w.Protocol() != 3 {
		t.Errorf("RESP%d after SetProtocol(3)", w.Protocol())
	}
	defer func() {
		if recover() == nil {
			t.Error("SetProtocol(4) did not panic")
		}
	}()
	w.SetProtocol(4)
}

func TestWriterAllocs(t *testing.T) {
	item := []byte("item")
	for _, proto := range []int{2, 3} {
		w := NewWriter(io.Discard)
		w.SetProtocol(proto)
		n := testing.AllocsPerRun(1000, func() {
			w.SimpleString("OK")
			w.Error("ERR not found")
			w.Error("ERR with\nnewline")
			w.Integer(1234567)
			w.ArrayHeader(100)
			w.MapHeader(5)
			w.Bulk(item)
			w.BulkString("Capacity")
			w.Verbatim("txt", item)
			w.Null()
			w.NullArray()
			w.Bool(true)
			w.Double(0.01)
			w.WriteCommand([][]byte{item, item})
			w.Flush()
		})
		if n != 0 {
			t.Errorf("RESP%d: %v allocations", proto, n)
		}
	}
}

// countingWriter counts the Write calls it gets.
type countingWriter struct {
	writes int
	bytes.Buffer
}

func (c *countingWriter) Write(b []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(b)
}

// A server sends no reply before the changes it acknowledges are
// durable: however large the buffered replies grow, nothing reaches the
// destination before Flush, and Flush writes them in one call.
func TestWriterHoldsRepliesUntilFlush(t *testing.T) {
	var dst countingWriter
	w := NewWriter(&dst)
	big := bytes.Repeat([]byte("x"), 1<<20)
	for range 40 {
		w.Bulk(big)
		w.Integer(1)
	}
	if dst.writes != 0 || dst.Len() != 0 {
		t.Fatalf("%d writes, %d bytes reached the destination before Flush", dst.writes, dst.Len())
	}
	n := w.Buffered()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if dst.writes != 1 || dst.Len() != n || w.Buffered() != 0 {
		t.Fatalf("Flush: %d writes of %d bytes (%d buffered), %d left", dst.writes, dst.Len(), n, w.Buffered())
	}
}

// Bytes and Reset let a server replace replies it may not send.
func TestWriterReplaceBuffered(t *testing.T) {
	var dst bytes.Buffer
	w := NewWriter(&dst)
	w.Integer(1)
	keep := append([]byte(nil), w.Bytes()...)
	w.Bool(true)
	w.Reset()
	w.Raw(keep)
	w.Error("MISCONF disk full")
	w.Flush()
	if got := dst.String(); got != ":1\r\n-MISCONF disk full\r\n" {
		t.Fatalf("got %q", got)
	}
}

// errWriter fails every write.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// A failed Flush is reported by every later Flush.
func TestWriterStickyError(t *testing.T) {
	w := NewWriter(errWriter{})
	w.Integer(1)
	if err := w.Flush(); err == nil {
		t.Fatal("Flush to a broken writer succeeded")
	}
	w.Integer(2)
	if err := w.Flush(); err == nil {
		t.Fatal("the second Flush forgot the error")
	}
}
