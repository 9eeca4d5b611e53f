package server

import (
	"fmt"
	"reflect"
)

// Rows for BF.SCANDUMP and BF.LOADCHUNK.

// dumpChunkReply is one step of a SCANDUMP iteration: the iterator
// SCANDUMP answered and its data, which LOADCHUNK takes back as they are.
type dumpChunkReply struct {
	iter int64
	data string
}

// scanDump dumps key with BF.SCANDUMP until the iterator comes back 0,
// checks that the last reply is [0, ""], and returns the chunks.
func (b *bt) scanDump(key string) []dumpChunkReply {
	b.Helper()
	var out []dumpChunkReply
	iter := int64(0)
	for range 10000 {
		v, err := b.d.Do(b.ctx, "BF.SCANDUMP", key, iter).Result()
		arr, ok := v.([]any)
		if err != nil || !ok || len(arr) != 2 {
			b.Fatalf("BF.SCANDUMP %s %d: got %#v, %v; want [iterator, data]", key, iter, v, err)
		}
		next, ok1 := arr[0].(int64)
		data, ok2 := arr[1].(string)
		if !ok1 || !ok2 {
			b.Fatalf("BF.SCANDUMP %s %d: got %#v; want [integer, bulk string]", key, iter, v)
		}
		if next == 0 {
			if data != "" {
				b.Errorf("BF.SCANDUMP %s %d: the last reply has %d bytes, want none", key, iter, len(data))
			}
			return out
		}
		out = append(out, dumpChunkReply{next, data})
		iter = next
	}
	b.Fatalf("BF.SCANDUMP %s: no end after 10000 chunks", key)
	return nil
}

// loadChunks loads chunks into key with BF.LOADCHUNK.
func (b *bt) loadChunks(key string, chunks []dumpChunkReply) {
	b.Helper()
	for _, ch := range chunks {
		b.do("OK", "BF.LOADCHUNK", key, ch.iter, ch.data)
	}
}

// sameFilter checks that key b answers as key a: equal BF.INFO, the same
// answer for each of the first n items named item<i> (all present) and
// for 5000 absent items.
func (b *bt) sameFilter(a, c string, n int) {
	b.Helper()
	if ia, ic := b.info(a), b.info(c); !reflect.DeepEqual(ia, ic) {
		b.Errorf("BF.INFO %s = %v, BF.INFO %s = %v; want equal", a, ia, c, ic)
	}
	if n > 0 {
		for i, f := range b.flags(append([]any{"BF.MEXISTS", c}, items("item", n)...)...) {
			if !f {
				b.Fatalf("item%d, added to %s, is not in its copy %s", i, a, c)
			}
		}
	}
	absent := append([]any{"BF.MEXISTS"}, items("absent", 5000)...)
	absent[1] = a
	fa := b.flags(absent...)
	absent[1] = c
	fc := b.flags(absent...)
	if !reflect.DeepEqual(fa, fc) {
		b.Errorf("absent items: %s and its copy %s answer differently", a, c)
	}
}

func dumpRows() []behaviourRow {
	return []behaviourRow{
		{"bf.scandump/roundtrip-grown", func(b *bt) {
			src, dst := b.key("src"), b.key("dst")
			b.do("OK", "BF.RESERVE", src, "0.01", "100")
			b.madd(src, items("item", 1500))
			chunks := b.scanDump(src)
			if len(chunks) < 2 || chunks[0].iter != 1 {
				b.Fatalf("dump of a 4-filter chain: %d chunks, first iterator %v; want a header at 1 and bit arrays", len(chunks), chunks)
			}
			b.loadChunks(dst, chunks)
			b.sameFilter(src, dst, 1500)
			// The copy is independent: adding to it changes only it.
			b.do(flag(true), "BF.ADD", dst, "new")
			b.do(flag(false), "BF.EXISTS", src, "new")
		}},
		{"bf.scandump/roundtrip-typed", func(b *bt) {
			src, dst := b.key("src"), b.key("dst")
			b.do("OK", "BF.RESERVE", src, "0.001", "50", "EXPANSION", "3")
			b.madd(src, items("item", 400))
			var it int64
			for n := 0; ; n++ {
				d, err := b.c.BFScanDump(b.ctx, src, it).Result()
				if err != nil || n > 1000 {
					b.Fatalf("BFScanDump %d: %v (%d chunks)", it, err, n)
				}
				if d.Iter == 0 {
					break
				}
				if err := b.c.BFLoadChunk(b.ctx, dst, d.Iter, d.Data).Err(); err != nil {
					b.Fatalf("BFLoadChunk %d: %v", d.Iter, err)
				}
				it = d.Iter
			}
			b.sameFilter(src, dst, 400)
		}},
		{"bf.scandump/empty-and-nonscaling", func(b *bt) {
			b.do("OK", "BF.RESERVE", b.key("empty"), "0.01", "1000")
			b.loadChunks(b.key("empty2"), b.scanDump(b.key("empty")))
			b.sameFilter(b.key("empty"), b.key("empty2"), 0)
			ns := b.key("ns")
			b.do([]any{flag(true), flag(true), errReply(errFullText)}, "BF.INSERT", ns, "CAPACITY", "2", "NONSCALING", "ITEMS", "item0", "item1", "x")
			b.loadChunks(b.key("ns2"), b.scanDump(ns))
			b.sameFilter(ns, b.key("ns2"), 2)
			b.do(errReply(errFullText), "BF.ADD", b.key("ns2"), "x")
		}},
		{"bf.scandump/iterators", func(b *bt) {
			k := b.key("f")
			b.do(flag(true), "BF.ADD", k, "a")
			b.do([]any{0, ""}, "BF.SCANDUMP", k, "999999999")
			b.do(errReply("Second argument must be numeric"), "BF.SCANDUMP", k, "abc")
			b.do(errReply("Second argument must be numeric"), "BF.SCANDUMP", k, "1.5")
		}},
		{"bf.loadchunk/errors", func(b *bt) {
			src := b.key("src")
			b.do("OK", "BF.RESERVE", src, "0.01", "100")
			b.madd(src, items("item", 300))
			chunks := b.scanDump(src)
			hdr := chunks[0]
			b.do(errReply("ERR Second argument must be numeric"), "BF.LOADCHUNK", b.key("x"), "abc", hdr.data)
			b.do(errReply("ERR not found"), "BF.LOADCHUNK", b.key("x"), chunks[1].iter, chunks[1].data)
			b.do(errReply("ERR received bad data"), "BF.LOADCHUNK", b.key("x"), "1", "garbage")
			b.do(errReply("ERR received bad data"), "BF.LOADCHUNK", b.key("x"), "1", hdr.data[:len(hdr.data)/2])
			b.do(0, "EXISTS", b.key("x"))
			// Chunks RedisBloom refuses: an iterator below 1 or below the
			// chunk's length, a start outside the bit arrays, a chunk
			// longer than what is left of its sub-filter.
			b.do("OK", "BF.LOADCHUNK", b.key("y"), hdr.iter, hdr.data)
			b.do(errReply("ERR received bad data"), "BF.LOADCHUNK", b.key("y"), "-5", chunks[1].data)
			b.do(errReply("ERR received bad data"), "BF.LOADCHUNK", b.key("y"), "0", "")
			b.do(errReply("ERR received bad data"), "BF.LOADCHUNK", b.key("y"), "3", "abcd")
			b.do(errReply("ERR invalid offset - no link found"), "BF.LOADCHUNK", b.key("y"), "999999999", chunks[1].data)
			b.do(errReply("ERR invalid offset - no link found"), "BF.LOADCHUNK", b.key("y"), "4", "abcd")
			b.do(errReply("ERR invalid chunk - Too big for current filter"), "BF.LOADCHUNK", b.key("y"), chunks[1].iter+1, chunks[1].data+"x")
			b.do("OK", "BF.LOADCHUNK", b.key("y"), "1", "")
			// A header onto a key that holds a filter fails and leaves it.
			before := b.info(src)
			b.do(check(func(v any, err error) string {
				if err == nil {
					return fmt.Sprintf("got %#v, want an error", v)
				}
				return ""
			}), "BF.LOADCHUNK", src, hdr.iter, hdr.data)
			if after := b.info(src); !reflect.DeepEqual(before, after) {
				b.Errorf("BF.INFO after a failed LOADCHUNK = %v, before %v", after, before)
			}
			b.do(flag(true), "BF.EXISTS", src, "item7")
		}},
	}
}
