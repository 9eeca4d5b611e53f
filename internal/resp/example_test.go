package resp_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/bloomery/bloom/internal/resp"
)

// A connection loop: read a command, answer it, flush only when no
// pipelined command is waiting, and answer a protocol error with -ERR
// before closing, as Redis does.
func Example() {
	in := "*1\r\n$4\r\nPING\r\nECHO \"hello world\"\r\n*1\r\n$x\r\n"
	r := resp.NewReader(bufio.NewReader(strings.NewReader(in)), resp.Limits{})
	var out bytes.Buffer
	w := resp.NewWriter(&out)
	var args [][]byte
	for {
		var err error
		args, err = r.ReadCommand(args)
		var perr *resp.ProtocolError
		if errors.As(err, &perr) {
			w.Error("ERR " + perr.Error())
			w.Flush()
			break // and close the connection
		} else if err != nil {
			break // io.EOF, a network error, or ErrQueryBufferLimit: close without a reply
		}
		switch strings.ToUpper(string(args[0])) {
		case "PING":
			w.SimpleString("PONG")
		case "ECHO":
			w.Bulk(args[1])
		}
		if r.Buffered() == 0 {
			w.Flush()
		}
	}
	fmt.Printf("%q\n", out.String())
	// Output:
	// "+PONG\r\n$11\r\nhello world\r\n-ERR Protocol error: invalid bulk length\r\n"
}

func ExampleReader_ReadCommand() {
	in := "*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$4\r\nitem\r\n" + // what client libraries send
		"\r\n" + // an empty line, skipped
		"BF.EXISTS k 'item'\r\n" // what people type
	r := resp.NewReader(bufio.NewReader(strings.NewReader(in)), resp.Limits{})
	var args [][]byte
	for {
		var err error
		if args, err = r.ReadCommand(args); err != nil {
			fmt.Println(err)
			break
		}
		fmt.Printf("%q\n", args)
	}
	// Output:
	// ["BF.ADD" "k" "item"]
	// ["BF.EXISTS" "k" "item"]
	// EOF
}

func ExampleReader_SetAuthRequired() {
	// Before AUTH, Redis refuses arrays of more than 10 elements.
	in := "*11\r\n"
	r := resp.NewReader(bufio.NewReader(strings.NewReader(in)), resp.Limits{})
	r.SetAuthRequired(true)
	_, err := r.ReadCommand(nil)
	fmt.Println(err)
	// Output:
	// Protocol error: unauthenticated multibulk length
}

func ExampleNewReader() {
	// Smaller limits than Redis's, for a server that only takes BF.* commands.
	lim := resp.Limits{MaxBulk: 64 << 20, MaxArgs: 100_000}
	r := resp.NewReader(bufio.NewReaderSize(strings.NewReader("*1\r\n$100000000\r\n"), 16<<10), lim)
	_, err := r.ReadCommand(nil)
	fmt.Println(err)
	fmt.Println(r.Limits().MaxInline)
	// Output:
	// Protocol error: invalid bulk length
	// 65536
}

// The reply to BF.INFO key: a flat array of pairs in RESP2, a map in RESP3.
func ExampleWriter_MapHeader() {
	for _, proto := range []int{2, 3} {
		var out bytes.Buffer
		w := resp.NewWriter(&out)
		w.SetProtocol(proto)
		w.MapHeader(2)
		w.BulkString("Capacity")
		w.Integer(100)
		w.BulkString("Expansion rate")
		w.Null() // non-scaling
		w.Flush()
		fmt.Printf("RESP%d %q\n", proto, out.String())
	}
	// Output:
	// RESP2 "*4\r\n$8\r\nCapacity\r\n:100\r\n$14\r\nExpansion rate\r\n$-1\r\n"
	// RESP3 "%2\r\n$8\r\nCapacity\r\n:100\r\n$14\r\nExpansion rate\r\n_\r\n"
}

// The reply to BF.MADD: booleans in RESP3, integers in RESP2, and an error
// can be an element.
func ExampleWriter_Bool() {
	for _, proto := range []int{2, 3} {
		var out bytes.Buffer
		w := resp.NewWriter(&out)
		w.SetProtocol(proto)
		w.ArrayHeader(3)
		w.Bool(true)
		w.Bool(false)
		w.Error("ERR non scaling filter is full")
		w.Flush()
		fmt.Printf("RESP%d %q\n", proto, out.String())
	}
	// Output:
	// RESP2 "*3\r\n:1\r\n:0\r\n-ERR non scaling filter is full\r\n"
	// RESP3 "*3\r\n#t\r\n#f\r\n-ERR non scaling filter is full\r\n"
}

func ExampleWriter_Double() {
	var out bytes.Buffer
	w := resp.NewWriter(&out)
	w.Double(0.01)
	w.SetProtocol(3)
	w.Double(0.1)
	w.Flush()
	fmt.Printf("%q\n", out.String())
	// Output:
	// "$4\r\n0.01\r\n,0.10000000000000001\r\n"
}

// Commands for a log or for another server are arrays of bulk strings
// whatever the protocol of the replies.
func ExampleWriter_WriteCommand() {
	var out bytes.Buffer
	w := resp.NewWriter(&out)
	w.WriteCommand([][]byte{[]byte("BF.ADD"), []byte("k"), []byte("item")})
	w.Flush()
	fmt.Printf("%q\n", out.String())
	// Output:
	// "*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$4\r\nitem\r\n"
}
