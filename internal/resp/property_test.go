package resp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// chunkReader returns its data in pieces of random sizes.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rng.IntN(100))
	if c.rng.IntN(8) == 0 {
		n = min(len(p), len(c.data)) // sometimes all it can
	}
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func randomArg(rng *rand.Rand) []byte {
	n := rng.IntN(40)
	switch rng.IntN(50) {
	case 0:
		n = rng.IntN(70000) // past bufio's buffer and growChunk
	case 1:
		n = 0
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

func randomCommands(rng *rand.Rand, n int) [][][]byte {
	cmds := make([][][]byte, n)
	for i := range cmds {
		args := make([][]byte, 1+rng.IntN(20))
		for j := range args {
			args[j] = randomArg(rng)
		}
		cmds[i] = args
	}
	return cmds
}

// readBack reads len(want) commands from stream, then expects io.EOF.
func readBack(t *testing.T, stream []byte, want [][][]byte, rng *rand.Rand) {
	t.Helper()
	size := []int{16, 64, 4096}[rng.IntN(3)]
	r := NewReader(bufio.NewReaderSize(&chunkReader{stream, rng}, size), Limits{})
	var args [][]byte
	for i, w := range want {
		var err error
		if args, err = r.ReadCommand(args); err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		if len(args) != len(w) {
			t.Fatalf("command %d: %d arguments, want %d", i, len(args), len(w))
		}
		for j := range w {
			if !bytes.Equal(args[j], w[j]) {
				t.Fatalf("command %d, argument %d: %.40q, want %.40q", i, j, args[j], w[j])
			}
		}
	}
	if _, err := r.ReadCommand(args); err != io.EOF {
		t.Fatalf("after the commands: %v", err)
	}
	if r.Offset() != int64(len(stream)) {
		t.Fatalf("offset %d of %d", r.Offset(), len(stream))
	}
}

// TestRoundTripArrays writes random commands with WriteCommand and reads
// them back, in random pieces.
func TestRoundTripArrays(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		cmds := randomCommands(rng, 1+rng.IntN(10))
		var b bytes.Buffer
		w := NewWriter(&b)
		for _, c := range cmds {
			w.WriteCommand(c)
		}
		w.Flush()
		readBack(t, b.Bytes(), cmds, rng)
	}
}

// repr quotes b as Redis's sdscatrepr does, the inverse of inline
// splitting: printable bytes as they are, \\ \" \n \r \t \a \b, and \xHH
// for the rest.
func repr(b []byte) string {
	var s bytes.Buffer
	s.WriteByte('"')
	for _, c := range b {
		switch c {
		case '\\', '"':
			s.WriteByte('\\')
			s.WriteByte(c)
		case '\n':
			s.WriteString(`\n`)
		case '\r':
			s.WriteString(`\r`)
		case '\t':
			s.WriteString(`\t`)
		case '\a':
			s.WriteString(`\a`)
		case '\b':
			s.WriteString(`\b`)
		default:
			if c >= 0x20 && c < 0x7f {
				s.WriteByte(c)
			} else {
				fmt.Fprintf(&s, `\x%02x`, c)
			}
		}
	}
	s.WriteByte('"')
	return s.String()
}

// bare reports whether b can be written unquoted in an inline command.
func bare(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c == 0 || isSpace(c) || c == '"' || c == '\'' {
			return false
		}
	}
	return true
}

// TestRoundTripInline writes random commands as inline commands, quoted
// as Redis's sdscatrepr quotes (or bare, or in single quotes, where they
// can be) and reads them back.
func TestRoundTripInline(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 2))
		cmds := make([][][]byte, 1+rng.IntN(10))
		var stream bytes.Buffer
		for i := range cmds {
			args := make([][]byte, 1+rng.IntN(8))
			for j := range args {
				args[j] = make([]byte, rng.IntN(12))
				for k := range args[j] {
					args[j][k] = byte(rng.IntN(256))
					if rng.IntN(2) == 0 {
						args[j][k] = 'a' + byte(rng.IntN(26)) // some bare words
					}
				}
				sep := []string{" ", "\t", "  ", " \v"}[rng.IntN(4)]
				if j == 0 {
					sep = []string{"", " ", "\t"}[rng.IntN(3)]
				}
				stream.WriteString(sep)
				switch a := args[j]; {
				case bare(a):
					stream.Write(a)
				case bytes.IndexAny(a, "'\\\n\x00") < 0 && rng.IntN(2) == 0:
					stream.WriteString("'" + string(a) + "'")
				default:
					stream.WriteString(repr(a))
				}
			}
			stream.WriteString([]string{"\r\n", "\n", " \r\n"}[rng.IntN(3)])
			cmds[i] = args
		}
		// A bare first word starting with '*' would read as an array.
		if bytes.HasPrefix(stream.Bytes(), []byte("*")) || bytes.Contains(stream.Bytes(), []byte("\n*")) {
			continue
		}
		readBack(t, stream.Bytes(), cmds, rng)
	}
}
