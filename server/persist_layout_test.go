package server

import (
	"fmt"
	"reflect"
	"testing"
)

// Filters keep their layout for life: a filter made in RedisBloom's
// layout (the server's choice then, or a rate too small for Bloomery's)
// comes back from the log and from a snapshot in RedisBloom's layout,
// byte for byte, whatever layout the restarted server gives new filters.
func TestPersistFilterLayouts(t *testing.T) {
	dir := t.TempDir()
	ps := startPServer(t, Config{Dir: dir, FilterLayout: LayoutRedisBloom})
	ps.do(t, "BF.RESERVE", "reserved", "0.001", "2000")
	ps.do(t, "BF.RESERVE", "nonscaling", "0.01", "100", "NONSCALING")
	ps.do(t, "BF.ADD", "added", "a")
	ps.do(t, "BF.INSERT", "inserted", "CAPACITY", "3", "EXPANSION", "3", "NONSCALING", "ITEMS", "x", "y")
	ps.do(t, "BF.INSERT", "grown", "CAPACITY", "5", "ITEMS", "a", "b", "c", "d", "e", "f", "g")
	ps.do(t, "BF.RESERVE", "empty", "0.01", "10")
	if got := ps.do(t, "BF.INFO", "reserved", "SIZE"); !reflect.DeepEqual(got, []any{int64(4056)}) {
		t.Errorf("BF.INFO SIZE of BF.RESERVE k 0.001 2000 in RedisBloom's layout = %v, want RedisBloom's [4056]", got)
	}
	// A rate below Bloomery's layouts' reach makes a RedisBloom-layout
	// filter on a Bloomery-layout server too.
	psB := startPServer(t, Config{Dir: t.TempDir()})
	psB.do(t, "BF.RESERVE", "tiny", "1e-300", "100")
	psB.do(t, "BF.INSERT", "tinyadd", "ERROR", "4.9e-324", "NONSCALING", "CAPACITY", "1", "ITEMS", "a")
	psB.do(t, "BF.ADD", "ours", "a")

	before, beforeB := dumpAll(t, ps), dumpAll(t, psB)
	if before["reserved"].header[0] == 'B' || beforeB["tiny"].header[0] == 'B' || beforeB["ours"].header[0] != 'B' {
		t.Fatalf("dump headers: want RedisBloom's for the RedisBloom-layout filters, Bloomery's (BLOOMERY…) for the other")
	}
	for name, src := range map[string]*pServer{"log": ps, "log (bloomery layout)": psB} {
		crash := copyDataDir(t, src.dir) // the log alone
		again := startPServer(t, Config{Dir: crash})
		want := before
		if src == psB {
			want = beforeB
		}
		if got := dumpAll(t, again); !reflect.DeepEqual(got, want) {
			t.Errorf("after replaying the %s: %v, want %v", name, got, want)
		}
		again.shutdown(t)
	}
	ps.shutdown(t)
	again := startPServer(t, Config{Dir: dir}) // the snapshot, in a Bloomery-layout server
	if got := dumpAll(t, again); !reflect.DeepEqual(got, before) {
		t.Errorf("after loading the snapshot: %v, want %v", got, before)
	}
	// New filters take the restarted server's layout.
	again.do(t, "BF.RESERVE", "new", "0.001", "2000")
	if got := again.do(t, "BF.INFO", "new", "SIZE"); reflect.DeepEqual(got, []any{int64(4056)}) {
		t.Errorf("a new filter on a Bloomery-layout server has RedisBloom's size")
	}
}

// keyDump is a filter as BF.SCANDUMP and BF.DEBUG show it.
type keyDump struct {
	header string
	bits   string
	debug  string
}

func (d keyDump) String() string {
	return fmt.Sprintf("{header %x, %d bytes of bits, %s}", d.header, len(d.bits), d.debug)
}

// dumpAll dumps every filter of ps.
func dumpAll(t *testing.T, ps *pServer) map[string]keyDump {
	t.Helper()
	out := map[string]keyDump{}
	for _, k := range ps.do(t, "KEYS", "*").([]any) {
		key := k.(string)
		var d keyDump
		for it := int64(0); ; {
			r := ps.do(t, "BF.SCANDUMP", key, it).([]any)
			if it == 0 {
				d.header = r[1].(string)
			} else {
				d.bits += r[1].(string)
			}
			if it = r[0].(int64); it == 0 {
				break
			}
		}
		d.debug = fmt.Sprint(ps.do(t, "BF.DEBUG", key))
		out[key] = d
	}
	return out
}
