package server

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// The argument parsers of BF.RESERVE and BF.INSERT, and the numbers they
// read. The replies as a whole are checked against RedisBloom's by the
// transcript replay (transcript_bf_test.go); these pin the parsers' own
// rules and fuzz them.

func TestParseInt(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"-7", -7, true}, {"100", 100, true},
		{"9223372036854775807", math.MaxInt64, true}, {"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-0", 0, false}, {"00", 0, false}, {"01", 0, false},
		{"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"", 0, false}, {"-", 0, false},
		{"1e3", 0, false}, {"0x10", 0, false}, {"1.0", 0, false},
	} {
		got, ok := parseInt([]byte(c.in))
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseFloat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0.01", 0.01, true}, {"1e-2", 0.01, true}, {"1E-2", 0.01, true}, {".5", 0.5, true}, {"5.", 5, true},
		{"+0.01", 0.01, true}, {".5e-1", 0.05, true}, {"-0", 0, true}, {"0", 0, true}, {"0e400", 0, true},
		{"0x1p-4", 0.0625, true}, {"0x0.1p0", 0.0625, true}, {"0X10", 16, true}, {"0x.8", 0.5, true},
		{"inf", math.Inf(1), true}, {"-Infinity", math.Inf(-1), true},
		{"4.9e-324", 5e-324, true},                    // subnormal: a number (C sets ERANGE, Redis accepts it)
		{"1e-400", 0, false}, {"0x1p-2000", 0, false}, // underflow to 0
		{"1e400", 0, false}, {"-1e400", 0, false}, // overflow
		{"nan", 0, false}, {"NaN", 0, false}, {"", 0, false}, {"abc", 0, false}, {"0.01abc", 0, false},
		{"0.1e", 0, false}, {"1e-", 0, false}, {" 0.01", 0, false}, {"0.01 ", 0, false}, {"\t1", 0, false},
		{"0x", 0, false}, {"0x_1p0", 0, false}, {"1_0", 0, false}, {"0,01", 0, false}, {"0x1p", 0, false},
	} {
		got, ok := parseFloat([]byte(c.in))
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("parseFloat(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// argWords splits s on spaces, "" standing for an empty argument.
func argWords(s string) [][]byte {
	var out [][]byte
	for _, w := range strings.Split(s, " ") {
		if w == `""` {
			w = ""
		}
		out = append(out, []byte(w))
	}
	return out
}

func TestParseInsert(t *testing.T) {
	def := defaultCreate
	for _, c := range []struct {
		args     string
		want     createOpts
		noCreate bool
		items    int
		msg      string
	}{
		{args: "BF.INSERT k ITEMS a b", want: def, items: 2},
		{args: "BF.INSERT k i a", want: def, items: 1},
		{args: "BF.INSERT k icecream ITEMS", want: def, items: 1},
		{args: "BF.INSERT k CAP 50 ER 0.1 EXP 3 ITEMS a", want: createOpts{rate: 0.1, capacity: 50, expansion: 3}, items: 1},
		{args: "BF.INSERT k c 5 e 7 Error 0.5 ITEMS a", want: createOpts{rate: 0.25, capacity: 5, expansion: 7}, items: 1},
		{args: "BF.INSERT k CAPACITY 10 CAPACITY 20 ITEMS a", want: createOpts{rate: 0.01, capacity: 20, expansion: 2}, items: 1},
		{args: "BF.INSERT k NO ITEMS a", want: createOpts{rate: 0.01, capacity: 100, expansion: 2, nonScaling: true}, items: 1},
		{args: "BF.INSERT k N ITEMS a", want: createOpts{rate: 0.01, capacity: 100, expansion: 2, nonScaling: true}, items: 1},
		{args: "BF.INSERT k NOC ITEMS a", want: def, noCreate: true, items: 1},
		{args: "BF.INSERT k nOcTuRnE ITEMS a", want: def, noCreate: true, items: 1},
		{args: "BF.INSERT k EXPANSION 0 ITEMS a", want: createOpts{rate: 0.01, capacity: 100, nonScaling: true}, items: 1},
		{args: "BF.INSERT k EXPANSION 3 NONSCALING ITEMS a", want: createOpts{rate: 0.01, capacity: 100, expansion: 3, nonScaling: true}, items: 1},
		{args: "BF.INSERT k EROSION 3 ITEMS a", msg: "Bad error rate"},
		{args: "BF.INSERT k ERROR 1 ITEMS a", msg: "Bad error rate"},
		{args: "BF.INSERT k ERROR 0 ITEMS", msg: "Bad error rate"},
		{args: "BF.INSERT k CAPACITY 1073741825 ITEMS a", msg: "Bad capacity"},
		{args: "BF.INSERT k CAPACITY -0 ITEMS a", msg: "Bad capacity"},
		{args: "BF.INSERT k EXPANSION 32769 ITEMS a", msg: "Bad expansion"},
		{args: "BF.INSERT k ERROR 0 CAPACITY 0 ITEMS a", msg: "Bad error rate"},
		{args: `BF.INSERT k "" ITEMS a`, msg: "Unknown argument received"},
		{args: "BF.INSERT k 1 ITEMS a", msg: "Unknown argument received"},
		{args: "BF.INSERT k ITEMS", msg: errArity},
		{args: "BF.INSERT k CAPACITY 10", msg: errArity},
		{args: "BF.INSERT k CAPACITY 10 ERROR", msg: errArity},
		{args: "BF.INSERT k NOCREATE", msg: errArity},
	} {
		args := argWords(c.args)
		req, msg := parseInsert(args)
		switch {
		case msg != c.msg:
			t.Errorf("%s: reply %q, want %q", c.args, msg, c.msg)
		case msg != "":
		case req.create != c.want || req.noCreate != c.noCreate || len(req.items) != c.items:
			t.Errorf("%s: %+v nocreate %v, %d items; want %+v nocreate %v, %d items",
				c.args, req.create, req.noCreate, len(req.items), c.want, c.noCreate, c.items)
		}
	}
}

func TestParseReserve(t *testing.T) {
	for _, c := range []struct {
		args string
		want createOpts
		msg  string
	}{
		{args: "BF.RESERVE k 0.01 100", want: defaultCreate},
		{args: "BF.RESERVE k 0.5 7 FOO", want: createOpts{rate: 0.25, capacity: 7, expansion: 2}},
		{args: "BF.RESERVE k 0.01 100 EXPANSION 0", want: createOpts{rate: 0.01, capacity: 100, nonScaling: true}},
		{args: "BF.RESERVE k 0.01 100 NONSCALING EXPANSION 0", want: createOpts{rate: 0.01, capacity: 100, nonScaling: true}},
		{args: "BF.RESERVE nonscaling 0.01 100", want: createOpts{rate: 0.01, capacity: 100, expansion: 2, nonScaling: true}},
		{args: "BF.RESERVE k 0.01 100 EXPANSION 3 EXPANSION", want: createOpts{rate: 0.01, capacity: 100, expansion: 3}},
		{args: "BF.RESERVE expansion 0.01 100", msg: msgBadExpansion},
		{args: "BF.RESERVE k 0 0", msg: msgRateRange},
		{args: "BF.RESERVE k abc 0", msg: msgBadRate},
		{args: "BF.RESERVE k 0.01 -0", msg: msgBadCapacity},
		{args: "BF.RESERVE k 0.01 1073741825", msg: msgCapacityRange},
		{args: "BF.RESERVE k 0.01 100 NONSCALING EXPANSION", msg: msgNoExpansion},
		{args: "BF.RESERVE k 0.01 100 NONSCALING EXPANSION abc", msg: msgBadExpansion},
		{args: "BF.RESERVE k 0.01 100 NONSCALING EXPANSION -1", msg: msgCannotExpand},
		{args: "BF.RESERVE k 0.01 100 EXPANSION 32769 NONSCALING", msg: msgCannotExpand},
		{args: "BF.RESERVE k 0.01 100 EXPANSION 32769", msg: msgExpansionRange},
		{args: "BF.RESERVE k 0.01 100 EXPANSION -1", msg: msgExpansionRange},
	} {
		o, msg := parseReserve(argWords(c.args))
		if msg != c.msg || (msg == "" && o != c.want) {
			t.Errorf("%s: %+v, %q; want %+v, %q", c.args, o, msg, c.want, c.msg)
		}
	}
}

// FuzzBloomArgs feeds both parsers arbitrary arguments (NUL-separated)
// and checks what they accept: options within RedisBloom's limits, items
// the tail of the arguments.
func FuzzBloomArgs(f *testing.F) {
	for _, s := range []string{
		"k\x00ITEMS\x00a", "k\x00CAP\x0050\x00ER\x000.1\x00EXP\x003\x00I\x00x",
		"k\x00N\x00NOC\x00ITEMS", "k\x000x1p-4\x00100\x00EXPANSION\x000\x00NONSCALING",
		"nonscaling\x001e-2\x0010", "k\x004.9e-324\x001\x00NONSCALING",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		args := append([][]byte{[]byte("BF.X")}, bytes.Split(in, []byte{0})...)
		if req, msg := parseInsert(args); msg == "" {
			checkCreate(t, req.create)
			if len(req.items) == 0 || &req.items[len(req.items)-1] != &args[len(args)-1] {
				t.Fatalf("items %q are not the tail of %q", req.items, args)
			}
		}
		if len(args) >= 4 && len(args) <= 7 {
			if o, msg := parseReserve(args); msg == "" {
				checkCreate(t, o)
			}
		}
		if r, ok := parseFloat(in); ok && math.IsNaN(r) {
			t.Fatalf("parseFloat(%q) = NaN", in)
		}
	})
}

// checkCreate fails t unless o is within RedisBloom's limits.
func checkCreate(t *testing.T, o createOpts) {
	t.Helper()
	if !(o.rate > 0 && o.rate <= maxErrorRate) || o.capacity < 1 || o.capacity > maxCapacity ||
		o.expansion > maxExpansion || (o.expansion == 0 && !o.nonScaling) {
		t.Fatalf("accepted %+v", o)
	}
}
