package server

import (
	"strconv"
	"strings"
	"testing"
)

// TestCFLimitRepliesSameOnBothBackends: under the same per-filter limit,
// the memory and the Redis backend refuse the same cuckoo filters and
// growths with the same bytes, RESP2 and RESP3: a reservation or a
// header past the limit, an insert whose growth would pass it (-1 inside
// the array), a CF.ADD that cannot grow, and the sub-filter cap.
func TestCFLimitRepliesSameOnBothBackends(t *testing.T) {
	memAddr, redAddr := startBothBackends(t, Config{MaxFilterBytes: 16 << 10})

	fill := []string{"CF.INSERT", "g", "ITEMS"}
	for i := range 8500 { // 8 KiB, then a growth of 16 KiB more would pass 16 KiB
		fill = append(fill, "g"+strconv.Itoa(i))
	}
	many := []string{"CF.INSERT", "tiny", "ITEMS"}
	for i := range 400 {
		many = append(many, "t"+strconv.Itoa(i))
	}
	hdr := string([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}) + string(make([]byte, 8)) +
		string([]byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 20, 0, 1, 0}) // 2^24 buckets of 2: 32 MiB
	want := map[int]string{ // what both answer in RESP2, for some commands, in part
		0:  "-" + string(errNoMemory) + "\r\n",
		2:  ":-1\r\n", // growth refused inside the array
		3:  "-" + string(errCFGrow) + "\r\n",
		5:  "-" + string(errNoMemory) + "\r\n",
		10: "-" + string(errMaxExpansions) + "\r\n",
	}
	cmds := [][]string{
		{"CF.RESERVE", "big", "1073741824"},
		{"CF.RESERVE", "g", "8192", "EXPANSION", "2"},
		fill,
		{"CF.ADD", "g", "one more"},
		{"CF.INFO", "g"},
		{"CF.LOADCHUNK", "h", "1", hdr},
		{"CF.RESERVE", "tiny", "4", "BUCKETSIZE", "1", "MAXITERATIONS", "1"},
		many, many,
		{"CF.INFO", "tiny"},
		{"CF.ADD", "tiny", "x"},
		{"CF.ADDNX", "tiny", "t1"},
	}
	for _, proto := range []string{"2", "3"} {
		mem, red := dialRaw(t, memAddr), dialRaw(t, redAddr)
		if proto == "3" {
			mem.do("HELLO", "3")
			red.do("HELLO", "3")
		}
		mem.do("FLUSHALL")
		red.do("FLUSHALL")
		for i, args := range cmds {
			m, r := mem.do(args...), red.do(args...)
			if m != r {
				t.Errorf("RESP%s %.40q: memory %.300q, redis %.300q", proto, args, m, r)
			}
			if w, ok := want[i]; ok && proto == "2" && !strings.Contains(m, w) {
				t.Errorf("RESP%s %.40q: %.200q, want %q in it", proto, args, m, w)
			}
		}
	}
}
