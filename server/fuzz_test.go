package server

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/resp"
)

// FuzzServerCommands sends random and mutated input over a real
// connection to an in-process server with small limits and a small
// memory budget, and checks that the server survives it: it answers with
// well-formed replies, ends the connection when the input ends, answers
// PING on a fresh connection afterwards, keeps its filters within the
// budget, and the process's heap stays bounded.

// Limits of the fuzzed server.
const (
	fuzzMaxMemory = 1 << 20
	fuzzMaxHeap   = 256 << 20 // the Go heap after any input
)

var fuzzTarget struct {
	once sync.Once
	srv  *Server
	addr string
	err  error
}

// fuzzServer returns the process's fuzzed server, started on first use;
// it lives as long as the process, since the fuzzing engine runs the
// target many times in each worker. SHUTDOWN is taken out of its command
// table: an input could otherwise stop it.
func fuzzServer(t testing.TB) (*Server, string) {
	t.Helper()
	fuzzTarget.once.Do(func() {
		srv, err := New(Config{
			Addr: "127.0.0.1:0", Dir: "-", MaxMemory: fuzzMaxMemory, MaxFilterBytes: 256 << 10,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			fuzzTarget.err = err
			return
		}
		// Input limits below Redis's minimums (New refuses them), so
		// that the fuzzer reaches them.
		srv.cfg.Limits = resp.Limits{MaxBulk: 4096, MaxArgs: 64, MaxInline: 1024, MaxQueryBuffer: 64 << 10}
		delete(srv.cmds, "shutdown")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fuzzTarget.err = err
			return
		}
		go srv.Serve(ln)
		fuzzTarget.srv, fuzzTarget.addr = srv, ln.Addr().String()
	})
	if fuzzTarget.err != nil {
		t.Fatalf("fuzzed server: %v", fuzzTarget.err)
	}
	return fuzzTarget.srv, fuzzTarget.addr
}

// fuzzSeeds are the seed corpus: valid commands, pipelines, inline
// commands, a real dump to load, huge declared lengths, negative counts.
func fuzzSeeds(t testing.TB) []string {
	cmds := func(lines ...[]string) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(encodeCommand(l...))
		}
		return b.String()
	}
	// A real dump, from the server itself.
	_, addr := fuzzServer(t)
	c := dialRaw(t, addr)
	c.do("BF.RESERVE", "seed", "0.01", "10", "EXPANSION", "3")
	c.do("BF.MADD", "seed", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l")
	var dump []string
	for _, it := range []string{"0", "1"} {
		rd := bufio.NewReader(strings.NewReader(c.do("BF.SCANDUMP", "seed", it)))
		rd.ReadString('\n') // *2
		next, _ := rd.ReadString('\n')
		body, _ := readRawReply(rd)
		if i := strings.Index(body, "\r\n"); i > 0 && len(body) >= i+4 {
			dump = append(dump, strings.TrimSpace(next[1:]), body[i+2:len(body)-2])
		}
	}
	c.do("FLUSHALL")
	seeds := []string{
		cmds([]string{"BF.RESERVE", "k", "0.01", "100"}, []string{"BF.ADD", "k", "a"}, []string{"BF.EXISTS", "k", "a"},
			[]string{"BF.MADD", "k", "a", "b", "c"}, []string{"BF.MEXISTS", "k", "a", "z"}, []string{"BF.CARD", "k"},
			[]string{"BF.INFO", "k"}, []string{"BF.INFO", "k", "CAPACITY"}),
		cmds([]string{"BF.INSERT", "n", "CAPACITY", "2", "ERROR", "0.1", "NONSCALING", "ITEMS", "a", "b", "c"},
			[]string{"BF.INSERT", "n", "NOCREATE", "ITEMS", "a"}, []string{"BF.RESERVE", "x", "0.5", "3", "EXPANSION", "32768"},
			[]string{"BF.MADD", "x", "1", "2", "3", "4", "5", "6", "7", "8", "9"}),
		cmds([]string{"CF.RESERVE", "c", "8", "BUCKETSIZE", "1", "EXPANSION", "2"}, []string{"CF.INSERT", "c", "ITEMS", "a", "b", "c", "d", "e", "f", "g", "h", "i"},
			[]string{"CF.ADDNX", "c", "a"}, []string{"CF.DEL", "c", "a"}, []string{"CF.COUNT", "c", "b"}, []string{"CF.COMPACT", "c"},
			[]string{"CF.SCANDUMP", "c", "0"}, []string{"CF.LOADCHUNK", "d", "1", "0123456789abcdef0123456789abcdef012345"},
			[]string{"CF.RESERVE", "huge", "1073741824", "BUCKETSIZE", "1"}, []string{"CF.INFO", "c"}, []string{"HELLO", "3"}, []string{"CF.MEXISTS", "c", "a", "b"}),
		cmds([]string{"BF.RESERVE", "big", "0.0001", "1073741824"}, []string{"BF.INSERT", "big", "CAPACITY", "99999999", "ITEMS", "a"}),
		cmds([]string{"HELLO", "3"}, []string{"BF.ADD", "k", "a"}, []string{"BF.INFO", "k"}, []string{"CONFIG", "GET", "*"},
			[]string{"HELLO", "2"}, []string{"CLIENT", "INFO"}, []string{"COMMAND"}, []string{"INFO"}),
		cmds([]string{"BF.ADD", "e", "x"}, []string{"PEXPIRE", "e", "1"}, []string{"SCAN", "0", "MATCH", "*", "COUNT", "2"},
			[]string{"KEYS", "[a-z]*"}, []string{"RENAME", "k", "e"}, []string{"TTL", "e"}, []string{"DEL", "e", "k"},
			[]string{"FLUSHALL", "ASYNC"}, []string{"DBSIZE"}, []string{"QUIT"}, []string{"PING"}),
		"BF.ADD k a\r\nBF.EXISTS k \"a\"\r\nECHO \"x\\x41\\n\" 'y'\r\nPING\r\n\r\n",
		"*1\r\n$999999999999\r\n",
		"*99999999\r\n",
		"*2\r\n$4\r\nECHO\r\n$4095\r\nshort",
		"*-1\r\n*1\r\n$-1\r\n*-5\r\nPING\r\n",
		"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n:5\r\n",
		"AUTH x\r\nSELECT 1\r\nCLIENT SETNAME a\r\nCLIENT GETNAME\r\nfoo bar\r\n",
	}
	if len(dump) == 4 {
		seeds = append(seeds, cmds([]string{"BF.LOADCHUNK", "l", dump[0], dump[1]}, []string{"BF.LOADCHUNK", "l", dump[2], dump[3]},
			[]string{"BF.EXISTS", "l", "a"}, []string{"BF.SCANDUMP", "l", "0"}, []string{"BF.SCANDUMP", "l", "1"}))
	} else {
		t.Fatalf("no dump for the seed corpus: %q", dump)
	}
	return seeds
}

func FuzzServerCommands(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(fuzzOne)
}

// fuzzOne sends in on a fresh connection and checks the server.
func fuzzOne(t *testing.T, in []byte) {
	srv, addr := fuzzServer(t)
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		nc.Write(in) // fails if the server closed first, which is fine
		nc.(*net.TCPConn).CloseWrite()
	}()
	out, err := io.ReadAll(nc)
	reset := err != nil && strings.Contains(err.Error(), "connection reset")
	if err != nil && !reset {
		t.Fatalf("reading the replies: %v (the server did not end the connection)", err)
	}
	// The replies are well-formed; only a reset may cut the last one.
	br := bufio.NewReader(strings.NewReader(string(out)))
	for {
		if _, err := br.Peek(1); err != nil {
			break
		}
		r, err := readRawReply(br)
		cut := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !(reset && cut) {
			t.Fatalf("malformed reply %q: %v", truncate(r, 200), err)
		}
	}
	// The server still answers, and is cleaned for the next input.
	c := dialRaw(t, addr)
	if got := c.do("PING"); got != rawStatus("PONG") {
		t.Fatalf("PING on a fresh connection: %q", got)
	}
	if used := srv.backend.Stats().FilterBytes; used > fuzzMaxMemory {
		t.Fatalf("filters hold %d bytes, over the %d-byte budget", used, fuzzMaxMemory)
	}
	c.do("FLUSHALL")
	runtime.GC() // live bytes: earlier tests' garbage is not this input's doing
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > fuzzMaxHeap {
		t.Fatalf("heap %d bytes after the input, want under %d", ms.HeapAlloc, fuzzMaxHeap)
	}
}
