package server

import (
	"context"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/bloomery/bloom/cuckoo"
)

// FuzzCFLoadChunk sends a dump header and two chunks at any iterators
// through CF.LOADCHUNK (the command table's handler, as a client's
// command runs), then every CF.* command on what loaded, on a memory
// backend with a small budget. RedisBloom's CF.LOADCHUNK once wrote past
// a sub-filter's end (a 2024 CVE): here nothing panics, what is loaded
// stays within the per-filter limit and the budget, and the budget is
// charged exactly the filter's bytes.
func FuzzCFLoadChunk(f *testing.F) {
	src, err := cuckoo.New(8, cuckoo.WithBucketSize(2), cuckoo.WithExpansion(2))
	if err != nil {
		f.Fatal(err)
	}
	for i := range 40 {
		src.AddString(strconv.Itoa(i))
	}
	_, c1 := src.DumpChunk(1)
	_, c2 := src.DumpChunk(1 + int64(len(c1)))
	f.Add(src.DumpHeader(), 1+int64(len(c1)), c1, 1+int64(len(c1)+len(c2)), c2)
	hdr := func(buckets, filters uint64, bs, exp uint16) []byte {
		b := make([]byte, cuckoo.DumpHeaderSize)
		binary.LittleEndian.PutUint64(b[8:], buckets)
		binary.LittleEndian.PutUint64(b[24:], filters)
		binary.LittleEndian.PutUint16(b[32:], bs)
		binary.LittleEndian.PutUint16(b[34:], 20)
		binary.LittleEndian.PutUint16(b[36:], exp)
		return b
	}
	f.Add(hdr(4, 1, 2, 1), int64(17), []byte("abcdefgh"), int64(-5), []byte("x"))
	f.Add(hdr(1<<40, 1, 2, 1), int64(9), []byte("abcdefgh"), int64(9223372036854775807), []byte("abc"))
	f.Add(hdr(2, 3, 1, 3), int64(3), []byte("ab"), int64(25), []byte("0123456789abcdef"))
	f.Add(hdr(2, 65537, 255, 32768), int64(511), []byte{1, 2, 3}, int64(0), []byte{})
	f.Add([]byte("short"), int64(2), []byte("x"), int64(1), []byte("y"))
	cmds := testCommands()
	f.Fuzz(func(t *testing.T, header []byte, it1 int64, chunk1 []byte, it2 int64, chunk2 []byte) {
		const maxFilter, budget = 1 << 16, 1 << 17
		m := newMemstore(maxFilter, budget)
		r := newReplayer(m, cmds)
		run := func(args ...string) {
			b := make([][]byte, len(args))
			for i, a := range args {
				b[i] = []byte(a)
			}
			cmd := cmds.lookup(b[0])
			if !cmd.arityOK(len(b)) {
				t.Fatalf("%v: wrong arity in the test", args)
			}
			cmd.run(r.c, b)
			r.c.w.Reset()
		}
		run("CF.LOADCHUNK", "k", "1", string(header))
		run("CF.LOADCHUNK", "k", strconv.FormatInt(it1, 10), string(chunk1))
		run("CF.LOADCHUNK", "k", strconv.FormatInt(it2, 10), string(chunk2))
		run("CF.MEXISTS", "k", "a", "b", "", string(chunk1))
		run("CF.COUNT", "k", "a")
		run("CF.INSERT", "k", "NOCREATE", "ITEMS", "a", "b", "c", "d", "e", "f", "g", "h")
		run("CF.ADD", "k", "a")
		run("CF.ADDNX", "k", "z")
		run("CF.DEL", "k", "a")
		run("CF.DEL", "k", "b")
		run("CF.COMPACT", "k")
		run("CF.INFO", "k")
		run("CF.DEBUG", "k")
		for it, n := int64(0), 0; n < 100; n++ {
			next, _, err := memCuckoo{m}.ScanDump(context.Background(), "k", it)
			if err != nil || next == 0 {
				break
			}
			it = next
		}
		defer m.ks.lockKey("k").Unlock()
		used, held := m.used.Load(), uint64(0)
		if e := m.ks.get("k"); e != nil {
			held = e.bytes()
		}
		if used != held || held > maxFilter {
			t.Fatalf("the budget counts %d bytes, the filter holds %d (limit %d)", used, held, maxFilter)
		}
	})
}
