package server

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// bt runs one row of the behaviour table: a go-redis client, the
// protocol it speaks, and checks that compare replies with expectations
// written once for RESP2 and RESP3.
type bt struct {
	*testing.T
	c     *redis.Client
	d     doer // where do sends: c, or one connection of it (sticky)
	ctx   context.Context
	resp3 bool
	row   string
}

// doer sends a command: a *redis.Client (any connection of its pool) or
// a *redis.Conn (always the same one).
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// sticky makes do use one connection from now on, for rows about
// connection state (CLIENT SETNAME, CLIENT SETINFO).
func (b *bt) sticky() {
	conn := b.c.Conn()
	b.Cleanup(func() { conn.Close() })
	b.d = conn
}

// raw returns a plain connection to the row's server, speaking the row's
// protocol.
func (b *bt) raw() *rawConn {
	b.Helper()
	r := dialRaw(b, b.c.Options().Addr)
	if b.resp3 {
		if got := r.do("HELLO", "3"); !strings.HasPrefix(got, "%") {
			b.Fatalf("HELLO 3: got %q, want a map", got)
		}
	}
	return r
}

// key is name inside the row's hash tag, so rows never share keys and a
// row's keys share one cluster slot (RENAME, multi-key EXISTS and DEL).
func (b *bt) key(name string) string { return "{" + b.row + "}" + name }

// Expectations. A plain string is a status or bulk string reply, an int
// an integer reply, []any an array (element by element); the types below
// cover the rest.
type (
	// flag is an add/exists answer: :1/:0 in RESP2, #t/#f in RESP3.
	flag bool
	// errReply is an error reply with exactly this text.
	errReply string
	// null is a null reply (a nil element inside an array).
	null struct{}
	// pairs are name/value pairs: a flat array in RESP2, a map in RESP3.
	pairs []any
	// field is one named value (BF.INFO key FIELD): a one-element array
	// of the value in RESP2, a one-entry map in RESP3.
	field struct {
		name  string
		value any
	}
	// check is a custom test of the reply; it returns what is wrong, or "".
	check func(v any, err error) string
	// anyOK is any reply but an error.
	anyOK struct{}
)

// do sends args and checks the reply against want; it returns the reply.
func (b *bt) do(want any, args ...any) any {
	b.Helper()
	v, err := b.d.Do(b.ctx, args...).Result()
	if msg := b.match(want, v, err); msg != "" {
		b.Errorf("%s: %s", fmtArgs(args), msg)
	}
	return v
}

// doErr sends args and returns the error text of the reply ("" if none).
func (b *bt) doErr(args ...any) string {
	b.Helper()
	if err := b.d.Do(b.ctx, args...).Err(); err != nil {
		return err.Error()
	}
	return ""
}

// flags sends args, expects an array of add/exists answers, and returns
// them as bools.
func (b *bt) flags(args ...any) []bool {
	b.Helper()
	v, err := b.d.Do(b.ctx, args...).Result()
	arr, ok := v.([]any)
	if err != nil || !ok {
		b.Fatalf("%s: got %#v, %v; want an array", fmtArgs(args), v, err)
	}
	out := make([]bool, len(arr))
	for i, e := range arr {
		f, msg := b.flagOf(e)
		if msg != "" {
			b.Fatalf("%s: element %d: %s", fmtArgs(args), i, msg)
		}
		out[i] = f
	}
	return out
}

// flagOf reads one add/exists answer in the row's protocol.
func (b *bt) flagOf(v any) (bool, string) {
	if b.resp3 {
		f, ok := v.(bool)
		if !ok {
			return false, fmt.Sprintf("got %#v, want a RESP3 boolean", v)
		}
		return f, ""
	}
	n, ok := v.(int64)
	if !ok || (n != 0 && n != 1) {
		return false, fmt.Sprintf("got %#v, want integer 0 or 1", v)
	}
	return n == 1, ""
}

// match compares a reply (v, err) with want and says what differs.
func (b *bt) match(want, v any, err error) string {
	if e, ok := want.(errReply); ok {
		if err == nil || errors.Is(err, redis.Nil) {
			return fmt.Sprintf("got %#v, want error %q", v, string(e))
		}
		if err.Error() != string(e) {
			return fmt.Sprintf("got error %q, want %q", err.Error(), string(e))
		}
		return ""
	}
	if _, ok := want.(null); ok {
		if !errors.Is(err, redis.Nil) {
			return fmt.Sprintf("got %#v, %v; want null", v, err)
		}
		return ""
	}
	if c, ok := want.(check); ok {
		return c(v, err)
	}
	if err != nil {
		return fmt.Sprintf("got error %q, want %#v", err.Error(), want)
	}
	return b.matchValue(want, v)
}

// matchValue compares a reply value (or an element of one) with want.
func (b *bt) matchValue(want, v any) string {
	switch w := want.(type) {
	case anyOK:
		return ""
	case null:
		if v != nil {
			return fmt.Sprintf("got %#v, want null", v)
		}
		return ""
	case errReply:
		e, ok := v.(error)
		if !ok || e.Error() != string(w) {
			return fmt.Sprintf("got %#v, want error %q", v, string(w))
		}
		return ""
	case flag:
		f, msg := b.flagOf(v)
		if msg == "" && f != bool(w) {
			msg = fmt.Sprintf("got %v, want %v", f, bool(w))
		}
		return msg
	case int:
		return b.matchValue(int64(w), v)
	case []any:
		arr, ok := v.([]any)
		if !ok || len(arr) != len(w) {
			return fmt.Sprintf("got %#v, want array %#v", v, w)
		}
		for i := range w {
			if msg := b.matchValue(w[i], arr[i]); msg != "" {
				return fmt.Sprintf("element %d: %s (whole reply %#v)", i, msg, v)
			}
		}
		return ""
	case pairs:
		return b.matchPairs(w, v)
	case field:
		if !b.resp3 {
			return b.matchValue([]any{w.value}, v)
		}
		return b.matchPairs(pairs{w.name, w.value}, v)
	case check:
		return w(v, nil)
	}
	if !reflect.DeepEqual(want, v) {
		return fmt.Sprintf("got %#v, want %#v", v, want)
	}
	return ""
}

// matchPairs compares name/value pairs: a flat array in RESP2, a map (in
// the same order of names on the wire, which go-redis does not keep) in
// RESP3.
func (b *bt) matchPairs(w pairs, v any) string {
	if !b.resp3 {
		return b.matchValue([]any(w), v)
	}
	m, ok := v.(map[any]any)
	if !ok || len(m) != len(w)/2 {
		return fmt.Sprintf("got %#v, want a map of %d entries", v, len(w)/2)
	}
	for i := 0; i < len(w); i += 2 {
		got, ok := m[w[i]]
		if !ok {
			return fmt.Sprintf("map %#v has no %v", v, w[i])
		}
		if msg := b.matchValue(w[i+1], got); msg != "" {
			return fmt.Sprintf("%v: %s", w[i], msg)
		}
	}
	return ""
}

// pairMap reads name/value pairs (either form) into a map.
func (b *bt) pairMap(v any) map[string]any {
	b.Helper()
	out := map[string]any{}
	switch r := v.(type) {
	case map[any]any:
		for k, x := range r {
			out[fmt.Sprint(k)] = x
		}
	case []any:
		if len(r)%2 != 0 {
			b.Fatalf("odd number of elements in pairs %#v", v)
		}
		for i := 0; i < len(r); i += 2 {
			out[fmt.Sprint(r[i])] = r[i+1]
		}
	default:
		b.Fatalf("got %#v, want name/value pairs", v)
	}
	return out
}

// eventually retries f (which reports what is still wrong, or "") for up
// to d, and fails the row with the last complaint if it never passes.
func (b *bt) eventually(d time.Duration, f func() string) {
	b.Helper()
	deadline := time.Now().Add(d)
	for {
		msg := f()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			b.Errorf("after %v: %s", d, msg)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fmtArgs(args []any) string {
	s := fmt.Sprint(args)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
