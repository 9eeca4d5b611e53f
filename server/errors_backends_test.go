package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
)

// startBothBackends starts a server with cfg on the memory backend and
// one on the Redis backend (a redis-server of its own), and returns
// their addresses.
func startBothBackends(t *testing.T, cfg Config) (memAddr, redAddr string) {
	t.Helper()
	_, memAddr = startServer(t, cfg)
	cfg.Backend = "redis://" + redistest.Start(t).Addr() + "/0"
	_, redAddr = startServer(t, cfg)
	return memAddr, redAddr
}

// TestErrorRepliesSameOnBothBackends: the same failing command gets the
// same bytes from the memory and the Redis backend, RESP2 and RESP3: an
// error that keeps a filter from being created is the whole reply, one
// that stops a batch at an item (a full non-scaling filter, no room to
// grow) is the last element of its array (backend.go, itemError).
func TestErrorRepliesSameOnBothBackends(t *testing.T) {
	memAddr, redAddr := startBothBackends(t, Config{MaxFilterBytes: 64 << 10})

	grow := []string{"BF.INSERT", "grow", "ITEMS"}
	for i := range 50000 { // past the first sub-filter's 40000: no room to grow under 64 KiB
		grow = append(grow, "g"+strconv.Itoa(i))
	}
	cases := []struct {
		name  string
		args  []string
		reply string // what both answer (RESP2), a prefix for long replies
	}{
		{"insert creates beyond the limit", []string{"BF.INSERT", "big", "CAPACITY", "10000000", "ITEMS", "a"}, rawErr(string(errNoMemory))},
		{"madd on a missing key under the limit", []string{"BF.MADD", "small", "a", "b"}, rawArray(rawInt(1), rawInt(1))},
		{"reserve beyond the limit", []string{"BF.RESERVE", "big2", "0.001", "10000000"}, rawErr(string(errNoMemory))},
		{"reserve a non-scaling filter", []string{"BF.RESERVE", "ns", "0.01", "2", "NONSCALING"}, rawStatus("OK")},
		{"insert into it past full", []string{"BF.INSERT", "ns", "ITEMS", "a", "b", "c", "d"}, "*3\r\n:1\r\n:1\r\n-" + string(errFull) + "\r\n"},
		{"madd into it when full", []string{"BF.MADD", "ns", "e"}, rawArray(rawErr(string(errFull)))},
		{"add into it when full", []string{"BF.ADD", "ns", "f"}, rawErr(string(errFull))},
		{"reserve one that cannot grow", []string{"BF.RESERVE", "grow", "0.01", "40000"}, rawStatus("OK")},
		{"insert past its room", grow, "*"},
		{"insert nocreate on a missing key", []string{"BF.INSERT", "none", "NOCREATE", "ITEMS", "a"}, rawErr(string(errNotFound))},
	}
	for _, proto := range []string{"2", "3"} {
		mem, red := dialRaw(t, memAddr), dialRaw(t, redAddr)
		if proto == "3" {
			mem.do("HELLO", "3")
			red.do("HELLO", "3")
			mem.do("FLUSHALL")
			red.do("FLUSHALL")
		}
		for _, c := range cases {
			m, r := mem.do(c.args...), red.do(c.args...)
			if m != r {
				t.Errorf("RESP%s %s: memory %.200q, redis %.200q", proto, c.name, m, r)
			}
			if proto == "2" && !strings.HasPrefix(m, c.reply) {
				t.Errorf("RESP2 %s: %.200q, want %.200q", c.name, m, c.reply)
			}
		}
		// The batch past the room of "grow" stopped at an item, inside the array.
		if tail := "-" + string(errNoMemory) + "\r\n"; !strings.HasSuffix(mem.do(grow...), tail) {
			t.Errorf("RESP%s: growth beyond the limit does not end the array with %q", proto, tail)
		}
	}
}
