package transcript

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"time"
)

// timeout bounds each command of a run.
const timeout = 30 * time.Second

// Run runs c against the server at addr on a new connection, after
// FLUSHALL, in protocol proto (2: as a client starts; 3: after HELLO 3),
// and returns each command's reply.
func Run(addr string, proto int, c *Case) ([]*Reply, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	do := func(args [][]byte) (*Reply, error) {
		nc.SetDeadline(time.Now().Add(timeout))
		if _, err := nc.Write(encode(args)); err != nil {
			return nil, err
		}
		return readWithPushes(br)
	}
	setup := [][][]byte{{[]byte("FLUSHALL")}}
	if proto == 3 {
		setup = append(setup, [][]byte{[]byte("HELLO"), []byte("3")})
	}
	for _, args := range setup {
		r, err := do(args)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", args[0], err)
		}
		if r.Type == '-' {
			return nil, fmt.Errorf("%s: %s", args[0], r.Value)
		}
	}
	var replies []*Reply
	for i, cmd := range c.Cmds {
		args, err := cmd.resolve(replies)
		if err != nil {
			return replies, fmt.Errorf("case %q, command %d (line %d): %w", c.Name, i+1, cmd.Line, err)
		}
		r, err := do(args)
		if err != nil {
			return replies, fmt.Errorf("case %q, command %d (line %d): %w", c.Name, i+1, cmd.Line, err)
		}
		replies = append(replies, r)
	}
	return replies, nil
}

// readWithPushes reads one reply, with the RESP3 push messages before
// it in its Raw.
func readWithPushes(br *bufio.Reader) (*Reply, error) {
	var pushes []byte
	for {
		r, err := ReadReply(br)
		if err != nil {
			return nil, err
		}
		if r.Type != '>' {
			r.Raw = append(pushes, r.Raw...)
			return r, nil
		}
		pushes = append(pushes, r.Raw...)
	}
}

// resolve expands the command's references and ranges.
func (c *Cmd) resolve(replies []*Reply) ([][]byte, error) {
	var args [][]byte
	for _, a := range c.Args {
		switch {
		case a.IsRange:
			for i := a.From; i <= a.To; i++ {
				args = append(args, strconv.AppendInt([]byte(a.Prefix), i, 10))
			}
		case a.Cmd > 0:
			r := replies[a.Cmd-1]
			if a.Elem >= len(r.Elems) {
				return nil, fmt.Errorf("{%d.%d}: that reply has %d elements", a.Cmd, a.Elem, len(r.Elems))
			}
			args = append(args, r.Elems[a.Elem].Value)
		default:
			args = append(args, a.Lit)
		}
	}
	return args, nil
}

// encode is args as a RESP array of bulk strings.
func encode(args [][]byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n", len(a))
		b.Write(a)
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// Record runs every case in both protocols against addr and stores the
// replies in the cases.
func Record(addr string, cases []*Case) error {
	for _, c := range cases {
		for _, proto := range []int{2, 3} {
			replies, err := Run(addr, proto, c)
			if err != nil {
				return err
			}
			for i, r := range replies {
				c.Cmds[i].Replies[proto] = r.Raw
			}
		}
	}
	return nil
}

// Diff is a reply that differs from the record.
type Diff struct {
	Case  string
	Cmd   int // from 1
	Line  int
	Proto int
	Args  string
	Want  []byte
	Got   []byte
}

func (d Diff) String() string {
	return fmt.Sprintf("line %d: case %q command %d (RESP%d) %s:\n\twant %q\n\tgot  %q",
		d.Line, d.Case, d.Cmd, d.Proto, d.Args, d.Want, d.Got)
}

// Compare replays the recorded cases against addr and returns the
// replies that differ. With layout false, the replies of commands marked
// as depending on RedisBloom's layout are not compared (they still run:
// later commands may depend on their effect). Replies marked Shape are
// compared by their Shape.
func Compare(addr string, cases []*Case, layout bool) ([]Diff, error) {
	var diffs []Diff
	for _, c := range cases {
		for _, proto := range []int{2, 3} {
			replies, err := Run(addr, proto, c)
			if err != nil {
				return diffs, err
			}
			for i, cmd := range c.Cmds {
				want, ok := cmd.Replies[proto]
				if !ok || (cmd.Layout && !layout) {
					continue
				}
				if got := replies[i].Raw; !sameReply(cmd, got, want) {
					diffs = append(diffs, Diff{Case: c.Name, Cmd: i + 1, Line: cmd.Line, Proto: proto,
						Args: truncate(cmd.String(), 120), Want: want, Got: got})
				}
			}
		}
	}
	return diffs, nil
}

// sameReply compares a reply with the record, as cmd's mark says.
func sameReply(cmd *Cmd, got, want []byte) bool {
	if !cmd.Shape {
		return bytes.Equal(got, want)
	}
	g, err1 := Shape(got)
	w, err2 := Shape(want)
	return err1 == nil && err2 == nil && g == w
}
