package bloom

import (
	"bytes"
	"testing"
)

// FuzzUnmarshalCounting feeds arbitrary bytes to the counting filter's
// decoders, with the properties FuzzUnmarshal checks for Filter: no panic,
// every error a sentinel, a successful decode re-encodes to exactly the
// bytes consumed, LoadCounting agrees between a bytes.Reader and a plain
// stream and with UnmarshalBinary, and a decoded filter is usable. Each
// input is also tried with its CRCs recomputed (fixCRCs).
//
//	go test -run '^$' -fuzz '^FuzzUnmarshalCounting$' -fuzztime 1m .
func FuzzUnmarshalCounting(f *testing.F) {
	var valid [][]byte
	for _, keyed := range []bool{false, true} {
		for _, n := range []uint64{3, 100} {
			var opts []Option
			if keyed {
				opts = append(opts, WithKey(fuzzKey))
			}
			c, err := NewCounting(n, 0.01, opts...)
			if err != nil {
				f.Fatal(err)
			}
			for _, s := range []string{"apple", "banana", "cherry", "apple"} {
				c.AddString(s)
			}
			c.RemoveString("banana")
			b, err := c.MarshalBinary()
			if err != nil {
				f.Fatal(err)
			}
			valid = append(valid, b)
			f.Add(b)
		}
	}
	v := valid[0]
	flip := func(at int) []byte { c := bytes.Clone(v); c[at] ^= 0x10; return c }
	for _, s := range [][]byte{
		nil,
		v[:headerSize],
		v[:len(v)-1],
		append(bytes.Clone(v), 0),
		append(bytes.Clone(v), valid[1]...),
		flip(10),         // kind
		flip(11),         // layout
		flip(headerSize), // payload
		flip(len(v) - 2), // trailer reserved
		fuzzSeeds(f)[0],  // a Filter
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeCounting(t, data)
		if fixed := fixCRCs(data); fixed != nil {
			checkDecodeCounting(t, fixed)
		}
	})
}

func checkDecodeCounting(t *testing.T, data []byte) {
	checkDecoding(t, data, LoadCounting,
		func(opts []Option) (*Counting, error) { return newCounting(10, 0.1, 64, 3, newConfig(opts)) },
		func(t *testing.T, g *Counting) {
			g.TestString("probe")
			g.AddString("fuzz")
			if !g.TestString("fuzz") || g.CountString("fuzz") == 0 {
				t.Fatal("decoded filter lost an item just added")
			}
			if !g.RemoveString("fuzz") {
				t.Fatal("decoded filter: Remove of an item just added reported absent")
			}
		})
}
