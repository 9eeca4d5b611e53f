package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
)

const sample = `# header
=== strings
> SET k "two words"
2 "+OK\r\n"
3 "+OK\r\n"
> GET k
> APPEND k {2.0}

=== ranges and refs
>@ RPUSH l {range item: 1 3}
> LRANGE l 0 -1
> RPUSH m {2.1} {2.2} "" "q\"uote" {range x 5 5}
`

func TestParse(t *testing.T) {
	src := strings.Replace(sample, "> APPEND k {2.0}\n", "", 1)
	cases, err := Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 2 || cases[0].Name != "strings" || len(cases[0].Cmds) != 2 || len(cases[1].Cmds) != 3 {
		t.Fatalf("parsed %+v", cases)
	}
	set := cases[0].Cmds[0]
	if string(set.Args[2].Lit) != "two words" || string(set.Replies[3]) != "+OK\r\n" || set.Layout {
		t.Fatalf("SET: %+v", set)
	}
	rpush := cases[1].Cmds[0]
	if !rpush.Layout || !rpush.Args[2].IsRange || rpush.Args[2].Prefix != "item:" || rpush.Args[2].To != 3 {
		t.Fatalf("RPUSH: %+v", rpush)
	}
	m := cases[1].Cmds[2]
	if m.Args[2].Cmd != 2 || m.Args[2].Elem != 1 || string(m.Args[5].Lit) != `q"uote` || len(m.Args[4].Lit) != 0 {
		t.Fatalf("RPUSH m: %+v", m)
	}
	var b bytes.Buffer
	if err := Write(&b, "h", cases); err != nil {
		t.Fatal(err)
	}
	first := b.String()
	again, err := Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	var b2 bytes.Buffer
	Write(&b2, "h", again)
	if first != b2.String() {
		t.Fatalf("Write∘Parse is not the identity:\n%s\n---\n%s", first, b2.String())
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"> PING\n",                           // no case
		"=== c\n2 \"+OK\\r\\n\"\n",           // reply before a command
		"=== c\n> GET {1.0}\n",               // a reference to itself
		"=== c\n> PING\n> GET {2.0}\n",       // a reference forward
		"=== c\n> GET {0.0}\n",               // commands count from 1
		"=== c\n> GET {x.y}\n",               // not numbers
		"=== c\n> GET {range a 5 1}\n",       // backwards
		"=== c\n> GET {range a 0 9999999}\n", // too many words
		"=== c\n> GET {1.0\n",                // unclosed
		"=== c\n> GET \"open\n",              // unclosed quote
		"=== c\n> PING\n2 notquoted\n",       // a reply not quoted
		"=== c\nstray\n",                     // unknown line
		"=== c\n>  \n",                       // no arguments
	} {
		if _, err := Parse(strings.NewReader(src)); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: %v, want ErrSyntax", src, err)
		}
	}
}

func TestReadReply(t *testing.T) {
	for _, tc := range []struct {
		in    string
		typ   byte
		elems int
	}{
		{"+OK\r\n", '+', 0},
		{"-ERR x\r\n", '-', 0},
		{":-5\r\n", ':', 0},
		{"$3\r\nabc\r\n", '$', 0},
		{"$-1\r\n", '$', 0},
		{"*2\r\n:1\r\n$0\r\n\r\n", '*', 2},
		{"%1\r\n+Capacity\r\n:100\r\n", '%', 2},
		{"#t\r\n", '#', 0},
		{"_\r\n", '_', 0},
		{",0.5\r\n", ',', 0},
		{"=7\r\ntxt:abc\r\n", '=', 0},
		{"*1\r\n*1\r\n*0\r\n", '*', 1},
	} {
		r, err := ReadReply(bufio.NewReader(strings.NewReader(tc.in)))
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if string(r.Raw) != tc.in || r.Type != tc.typ || len(r.Elems) != tc.elems {
			t.Errorf("%q: raw %q type %q elems %d", tc.in, r.Raw, r.Type, len(r.Elems))
		}
	}
	for _, in := range []string{"?\r\n", "$5\r\nab\r\n", "$x\r\n", "*1\r\n", "+OK\n", "$99999999999\r\n",
		strings.Repeat("*1\r\n", 40) + ":1\r\n"} {
		if _, err := ReadReply(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// Record and Compare against a real redis-server, in both protocols: a
// replay of its own record has no differences, a changed reply one.
func TestRecordCompare(t *testing.T) {
	srv := redistest.Start(t)
	cases, err := Parse(strings.NewReader(`
=== lists
> RPUSH l {range item: 1 3}
> LRANGE l 0 -1
> RPUSH m {2.1} {2.2}
> LRANGE m 0 -1
> HSET h a 1
> HGETALL h
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := Record(srv.Addr(), cases); err != nil {
		t.Fatal(err)
	}
	c := cases[0].Cmds
	if string(c[3].Replies[2]) != "*2\r\n$6\r\nitem:2\r\n$6\r\nitem:3\r\n" {
		t.Fatalf("LRANGE m: %q", c[3].Replies[2])
	}
	if string(c[5].Replies[3]) != "%1\r\n$1\r\na\r\n$1\r\n1\r\n" {
		t.Fatalf("HGETALL in RESP3: %q", c[5].Replies[3])
	}
	if d, err := Compare(srv.Addr(), cases, true); err != nil || len(d) != 0 {
		t.Fatalf("replay: %v %v", d, err)
	}
	c[1].Replies[2] = []byte("*0\r\n")
	c[1].Layout = true
	if d, _ := Compare(srv.Addr(), cases, true); len(d) != 1 || d[0].Cmd != 2 || d[0].Proto != 2 {
		t.Fatalf("diffs %v, want command 2 in RESP2", d)
	}
	if d, _ := Compare(srv.Addr(), cases, false); len(d) != 0 {
		t.Fatalf("a layout-dependent reply was compared: %v", d)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("=== c\n> GET {range a 1 2} {1.0}\n2 \"x\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		cases, err := Parse(strings.NewReader(src))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, "", cases); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(&b)
		if err != nil {
			t.Fatalf("Write made what Parse refuses: %v\n%s", err, b.String())
		}
		if len(again) != len(cases) {
			t.Fatalf("%d cases, %d after a round trip", len(cases), len(again))
		}
	})
}

func FuzzReadReply(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n:1\r\n$0\r\n\r\n", "%1\r\n+a\r\n:1\r\n", "$-1\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ReadReply(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			return
		}
		if !bytes.HasPrefix(in, r.Raw) {
			t.Fatalf("Raw %q is not what was read from %q", r.Raw, in)
		}
	})
}

func TestShape(t *testing.T) {
	for in, want := range map[string]string{
		"+OK\r\n":                      "+OK",
		"-ERR x\r\n":                   "-ERR x",
		":5\r\n":                       ":",
		"$3\r\nabc\r\n":                "$",
		"*-1\r\n":                      "*-1",
		"%1\r\n$4\r\nname\r\n:7\r\n":   "%1 $ :",
		">2\r\n$1\r\na\r\n_\r\n:1\r\n": ">2 $ _ :",
		"*2\r\n#t\r\n*0\r\n":           "*2 #t *0",
		"~1\r\n$2\r\non\r\n,0.5\r\n=5\r\ntxt:x\r\n": "~1 $ , =",
	} {
		if got, err := Shape([]byte(in)); err != nil || got != want {
			t.Errorf("Shape(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Shape([]byte("*2\r\n:1\r\n")); err == nil {
		t.Error("Shape of a cut reply: no error")
	}
}

// Pushes that follow a reply are recorded with the next reply, and a
// Shape mark compares them by shape: a real redis-server's client-side
// caching invalidation of the client's own write.
func TestRecordPushesAndShape(t *testing.T) {
	srv := redistest.Start(t)
	cases, err := Parse(strings.NewReader(`
=== tracking
> CLIENT TRACKING ON
> GET k
> SET k v
>~ CLIENT ID
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := Record(srv.Addr(), cases); err != nil {
		t.Fatal(err)
	}
	id := cases[0].Cmds[3]
	if !strings.HasPrefix(string(id.Replies[3]), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n:") {
		t.Fatalf("CLIENT ID after an own write, RESP3: %q, want the invalidation first", id.Replies[3])
	}
	if !strings.HasPrefix(string(id.Replies[2]), ":") {
		t.Fatalf("CLIENT ID in RESP2: %q, want no push", id.Replies[2])
	}
	id.Replies[3] = []byte(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n:99999\r\n")
	if d, err := Compare(srv.Addr(), cases, true); err != nil || len(d) != 0 {
		t.Fatalf("replay with another client id: %v %v", d, err)
	}
	id.Replies[3] = []byte(":99999\r\n")
	if d, _ := Compare(srv.Addr(), cases, true); len(d) != 1 {
		t.Fatalf("a missing push was not a difference: %v", d)
	}
}
