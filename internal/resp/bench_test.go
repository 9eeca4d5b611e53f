package resp

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// BenchmarkReadCommand parses pipelined commands from a buffer that never
// runs dry, as a server does under load; bytes/s is of the wire format.
func BenchmarkReadCommand(b *testing.B) {
	for _, bc := range []struct{ name, cmd string }{
		{"MADD100", madd(100)},
		{"MADD10", madd(10)},
		{"ADD", "*3\r\n$6\r\nBF.ADD\r\n$18\r\nfilter:{user}:seen\r\n$11\r\nitem:a-0000\r\n"},
		{"inline", "BF.ADD filter:{user}:seen \"item:a-0000\"\r\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pipeline := strings.Repeat(bc.cmd, 16)
			r := NewReader(bufio.NewReaderSize(&loopReader{data: []byte(pipeline)}, 16<<10), Limits{})
			var args [][]byte
			b.SetBytes(int64(len(bc.cmd)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if args, err = r.ReadCommand(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteReply writes the reply to a BF.MADD of 100 items.
func BenchmarkWriteReply(b *testing.B) {
	for _, proto := range []int{2, 3} {
		b.Run("MADD100/RESP"+string(rune('0'+proto)), func(b *testing.B) {
			w := NewWriter(io.Discard)
			w.SetProtocol(proto)
			b.ReportAllocs()
			for b.Loop() {
				w.ArrayHeader(100)
				for i := range 100 {
					w.Bool(i%3 == 0)
				}
			}
		})
	}
}
