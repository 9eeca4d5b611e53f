package interop

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A raw RESP pipeline for tests that send millions of commands: a
// writer goroutine per server streams the commands, and the test reads
// the replies as the bytes the servers wrote, in step across servers.

// pipelineTimeout bounds one lockstep run.
const pipelineTimeout = 5 * time.Minute

// lockstep sends n commands to each server of addrs, pipelined: the
// i-th to server s is what cmd(s, i, args[:0]) returns. It calls check
// with the i-th replies of all servers, in order, as raw RESP.
func lockstep(t *testing.T, addrs []string, n int, cmd func(s, i int, args []string) []string, check func(i int, replies []string)) {
	t.Helper()
	deadline := time.Now().Add(pipelineTimeout)
	readers := make([]*bufio.Reader, len(addrs))
	errc := make(chan error, len(addrs))
	for s, addr := range addrs {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close() // also ends a writer blocked on a server that stopped reading
		nc.SetDeadline(deadline)
		readers[s] = bufio.NewReaderSize(nc, 1<<16)
		go func() { errc <- writeCommands(nc, n, func(i int, args []string) []string { return cmd(s, i, args) }) }()
	}
	replies := make([]string, len(addrs))
	for i := range n {
		for s, br := range readers {
			r, err := readReply(br)
			if err != nil {
				t.Fatalf("%s: reply %d: %v (written: %v)", addrs[s], i, err, pendingErr(errc))
			}
			replies[s] = r
		}
		check(i, replies)
	}
	for range addrs {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// pendingErr is a writer's error if one has ended with one, else nil.
func pendingErr(errc chan error) error {
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// writeCommands writes the n commands cmd makes to nc as RESP arrays.
func writeCommands(nc net.Conn, n int, cmd func(i int, args []string) []string) error {
	w := bufio.NewWriterSize(nc, 1<<16)
	var args []string
	var b []byte
	for i := range n {
		args = cmd(i, args[:0])
		b = append(b[:0], '*')
		b = strconv.AppendInt(b, int64(len(args)), 10)
		b = append(b, "\r\n"...)
		for _, a := range args {
			b = append(b, '$')
			b = strconv.AppendInt(b, int64(len(a)), 10)
			b = append(b, "\r\n"...)
			b = append(b, a...)
			b = append(b, "\r\n"...)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return w.Flush()
}

// readReply reads one RESP2 reply (simple lines, bulk strings, arrays
// of them) and returns its bytes exactly.
func readReply(br *bufio.Reader) (string, error) {
	var b strings.Builder
	err := readReplyInto(br, &b)
	return b.String(), err
}

func readReplyInto(br *bufio.Reader, b *strings.Builder) error {
	line, err := br.ReadString('\n')
	b.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("short reply line %q", line)
	}
	switch line[0] {
	case '+', '-', ':':
		return nil
	case '$', '*':
		n, err := strconv.Atoi(line[1 : len(line)-2])
		if err != nil {
			return fmt.Errorf("bad length in %q", line)
		}
		if line[0] == '$' {
			if n < 0 {
				return nil
			}
			body := make([]byte, n+2)
			if _, err := io.ReadFull(br, body); err != nil {
				return err
			}
			b.Write(body)
			return nil
		}
		for range max(n, 0) {
			if err := readReplyInto(br, b); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown reply type in %q", line)
}
