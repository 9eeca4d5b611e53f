package redisfilter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A txStream sends mirrored writes (scalable_mirror.go) to one Redis on
// a connection of its own, each transaction written as soon as it is
// merged, without waiting for the replies of those before it: Redis
// runs one connection's commands in the order sent, so a write chained
// on the one before it (its gate expects the token that one sets)
// always comes after it. go-redis cannot do this: its pipelines on one
// connection take turns through their round trips, and two pipelines on
// two connections may run in either order (a write that overtakes the
// one it is chained on is refused, and must be sent again).
//
// The transactions are encoded here, straight into a buffer: MULTI, the
// gate (EVAL), the SETRANGEs, the ungate (EVAL), EXEC; a reader goroutine
// parses their replies in order (RESP2). A broken connection fails every
// write in flight (whose outcome the caller then cannot know: it drops
// its copy) and is dialed again for the next.
//
// Only a single-node client that authenticates with a username and
// password (or a CredentialsProvider) gets a stream; others (Cluster,
// Sentinel, an OnConnect hook, streaming credentials) send their
// mirrored writes through go-redis.
type txStream struct {
	opt *redis.Options

	mu   sync.Mutex // guards sc; held while a transaction is written, so writes are in queue order
	sc   *streamConn
	bufs sync.Pool // of *[]byte
}

// streamConn is one connection of a stream and its writes in flight.
type streamConn struct {
	c      net.Conn
	rd     *bufio.Reader
	mu     sync.Mutex // guards queue and err
	queue  []*txReply
	err    error         // set once broken
	wake   chan struct{} // buffered 1: the queue grew
	closed chan struct{} // closed when the reader has failed every write in flight
}

// errStream is the error of a stream's connection (dial, write, read,
// a reply out of shape): the writes in flight on it may or may not have
// run. addMirrored drops its copy and sends the batch again through
// go-redis, whose retries then apply.
var errStream = errors.New("redisfilter: mirrored writes' connection")

// txReply is what one transaction got back.
type txReply struct {
	sets int // SETRANGEs in it
	done chan struct{}

	gate   []int64 // the gate's reply {code, count}
	gateEr error   // or its error
	setErr error   // the first SETRANGE error (WRONGTYPE behind a refusing gate)
	err    error   // the transaction's own: EXECABORT, a broken connection
}

// streamFor returns a stream for client, or nil if it cannot have one.
func streamFor(client redis.UniversalClient) *txStream {
	c, ok := client.(*redis.Client)
	if !ok {
		return nil
	}
	opt := c.Options()
	if opt.Dialer == nil || opt.OnConnect != nil || opt.CredentialsProviderContext != nil || opt.StreamingCredentialsProvider != nil {
		return nil
	}
	return &txStream{opt: opt}
}

// send writes one transaction (buf, encoded by appendTx, with sets
// SETRANGEs) after those sent before it; wait then waits for its reply.
// Callers that chain writes on each other send them in the order they
// merged them (under the lock that orders their merges).
func (st *txStream) send(ctx context.Context, buf []byte, sets int) (*txReply, error) {
	r := &txReply{sets: sets, done: make(chan struct{})}
	st.mu.Lock()
	defer st.mu.Unlock()
	sc, err := st.conn(ctx)
	if err != nil {
		return nil, err
	}
	sc.mu.Lock()
	if sc.err != nil {
		err = sc.err
	} else {
		sc.queue = append(sc.queue, r)
	}
	sc.mu.Unlock()
	if err == nil {
		if d := st.opt.WriteTimeout; d > 0 {
			_ = sc.c.SetWriteDeadline(time.Now().Add(d))
		}
		if _, err = sc.c.Write(buf); err != nil {
			sc.fail(fmt.Errorf("%w: %w", errStream, err))
		}
	}
	if err != nil {
		st.sc = nil
		return nil, err
	}
	select {
	case sc.wake <- struct{}{}:
	default:
	}
	return r, nil
}

// wait waits for r's reply.
func (r *txReply) wait(ctx context.Context) (*txReply, error) {
	select {
	case <-r.done:
		return r, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// conn returns the stream's connection, dialing one if it has none or
// the last broke (st.mu held).
func (st *txStream) conn(ctx context.Context) (*streamConn, error) {
	if sc := st.sc; sc != nil {
		sc.mu.Lock()
		broken := sc.err != nil
		sc.mu.Unlock()
		if !broken {
			return sc, nil
		}
		st.sc = nil
	}
	opt := st.opt
	dctx, cancel := context.WithTimeout(ctx, max(opt.DialTimeout, time.Second))
	defer cancel()
	c, err := opt.Dialer(dctx, opt.Network, opt.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: dial: %w", errStream, err)
	}
	sc := &streamConn{c: c, rd: bufio.NewReaderSize(c, 64<<10), wake: make(chan struct{}, 1), closed: make(chan struct{})}
	if err := sc.hello(dctx, opt); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: %w", errStream, err)
	}
	go sc.read(opt.ReadTimeout)
	st.sc = sc
	return sc, nil
}

// hello authenticates and selects the database, as go-redis does for
// its own connections.
func (sc *streamConn) hello(ctx context.Context, opt *redis.Options) error {
	user, pass := opt.Username, opt.Password
	if opt.CredentialsProvider != nil {
		user, pass = opt.CredentialsProvider()
	}
	var cmds [][]string
	switch {
	case user != "":
		cmds = append(cmds, []string{"AUTH", user, pass})
	case pass != "":
		cmds = append(cmds, []string{"AUTH", pass})
	}
	if opt.DB > 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(opt.DB)})
	}
	if len(cmds) == 0 {
		return nil
	}
	if d, ok := ctx.Deadline(); ok {
		_ = sc.c.SetDeadline(d)
		defer sc.c.SetDeadline(time.Time{})
	}
	var buf []byte
	for _, c := range cmds {
		buf = appendCommand(buf, c...)
	}
	if _, err := sc.c.Write(buf); err != nil {
		return err
	}
	for _, c := range cmds {
		if _, err := readSimple(sc.rd); err != nil {
			return fmt.Errorf("%s: %w", c[0], err)
		}
	}
	return nil
}

// read parses the replies of the writes in flight, in order, until the
// connection breaks.
func (sc *streamConn) read(timeout time.Duration) {
	for {
		sc.mu.Lock()
		var r *txReply
		if len(sc.queue) > 0 {
			r = sc.queue[0]
		}
		err := sc.err
		sc.mu.Unlock()
		if err != nil {
			return
		}
		if r == nil {
			select {
			case <-sc.wake:
			case <-sc.closed:
				return
			}
			continue
		}
		if timeout > 0 {
			_ = sc.c.SetReadDeadline(time.Now().Add(timeout))
		}
		if err := r.parse(sc.rd); err != nil {
			sc.fail(fmt.Errorf("%w: %w", errStream, err))
			return
		}
		sc.mu.Lock()
		sc.queue = sc.queue[1:]
		sc.mu.Unlock()
		close(r.done)
	}
}

// fail breaks the connection: every write in flight fails with err.
func (sc *streamConn) fail(err error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.err != nil {
		return
	}
	sc.err = err
	sc.c.Close()
	for _, r := range sc.queue {
		r.err = err
		close(r.done)
	}
	sc.queue = nil
	close(sc.closed)
}

// parse reads one transaction's replies: +OK (MULTI), a +QUEUED per
// command (or the error that makes EXEC abort), and EXEC's array: the
// gate's reply, one integer (or error) per SETRANGE, the ungate's.
// A reply of the wrong shape is an error of the connection: the stream
// no longer knows where it is.
func (r *txReply) parse(rd *bufio.Reader) error {
	if _, err := readSimple(rd); err != nil {
		return fmt.Errorf("MULTI: %w", err)
	}
	var queueErr error
	for range r.sets + 2 {
		if _, err := readSimple(rd); err != nil {
			var re redisError
			if !errors.As(err, &re) {
				return err
			}
			queueErr = cmp(queueErr, err)
		}
	}
	line, err := readLine(rd)
	if err != nil {
		return err
	}
	switch {
	case line[0] == '-':
		r.err = cmp(queueErr, redisError(line[1:]))
		return nil
	case line[0] != '*':
		return fmt.Errorf("EXEC reply %.40q", line)
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n != r.sets+2 {
		return fmt.Errorf("EXEC reply of %q for %d commands", line, r.sets+2)
	}
	if r.gate, r.gateEr, err = readInts(rd); err != nil {
		return err
	}
	for range r.sets {
		if _, err := readSimple(rd); err != nil {
			var re redisError
			if !errors.As(err, &re) {
				return err
			}
			r.setErr = cmp(r.setErr, err)
		}
	}
	if _, err := readSimple(rd); err != nil {
		var re redisError
		if !errors.As(err, &re) {
			return err
		}
	}
	return nil
}

// cmp is a if it is an error, else b.
func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// redisError is an error reply.
type redisError string

func (e redisError) Error() string { return string(e) }

// readLine reads one line of RESP, without its CRLF.
func readLine(rd *bufio.Reader) ([]byte, error) {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("reply line %.40q", line)
	}
	return line[:len(line)-2], nil
}

// readSimple reads a simple string or an integer (returned as its text),
// or an error reply as a redisError.
func readSimple(rd *bufio.Reader) (string, error) {
	line, err := readLine(rd)
	if err != nil {
		return "", err
	}
	switch line[0] {
	case '+', ':':
		return string(line[1:]), nil
	case '-':
		return "", redisError(line[1:])
	}
	return "", fmt.Errorf("reply %.40q where a status or integer was due", line)
}

// readInts reads an array of integers (the gate's reply) or an error
// reply (returned as the second value).
func readInts(rd *bufio.Reader) ([]int64, error, error) {
	line, err := readLine(rd)
	if err != nil {
		return nil, nil, err
	}
	switch line[0] {
	case '-':
		return nil, redisError(line[1:]), nil
	case '*':
	default:
		return nil, nil, fmt.Errorf("gate reply %.40q", line)
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n < 0 || n > 16 {
		return nil, nil, fmt.Errorf("gate reply %.40q", line)
	}
	out := make([]int64, n)
	for i := range out {
		v, err := readSimple(rd)
		if err != nil {
			return nil, nil, err
		}
		if out[i], err = strconv.ParseInt(v, 10, 64); err != nil {
			return nil, nil, fmt.Errorf("gate reply: %w", err)
		}
	}
	return out, nil, nil
}

// appendCommand appends a command in RESP to buf.
func appendCommand(buf []byte, args ...string) []byte {
	buf = appendHeader(buf, '*', len(args))
	for _, a := range args {
		buf = appendBulk(buf, a)
	}
	return buf
}

func appendHeader(buf []byte, kind byte, n int) []byte {
	buf = append(buf, kind)
	buf = strconv.AppendInt(buf, int64(n), 10)
	return append(buf, '\r', '\n')
}

func appendBulk[T string | []byte](buf []byte, s T) []byte {
	buf = appendHeader(buf, '$', len(s))
	buf = append(buf, s...)
	return append(buf, '\r', '\n')
}

func appendBulkInt(buf []byte, v int64) []byte {
	var num [20]byte
	return appendBulk(buf, strconv.AppendInt(num[:0], v, 10))
}

// getBuf and putBuf recycle the encoded transactions.
func (st *txStream) getBuf() *[]byte {
	if b, ok := st.bufs.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

func (st *txStream) putBuf(b *[]byte) {
	*b = (*b)[:0]
	st.bufs.Put(b)
}

// appendMirroredTx appends a mirrored write's transaction to buf: MULTI,
// the gate, a SETRANGE of key per span of w (its bytes in w.buf), the
// ungate, EXEC. gateArgs are the gate's KEYS and ARGV, as addMirrored
// gives them to go-redis.
func (w *mirrorWrite) appendTx(buf []byte, key string, gateKeys []string, gateArgs []string, hold string) []byte {
	buf = appendCommand(buf, "MULTI")
	buf = appendHeader(buf, '*', 3+len(gateKeys)+len(gateArgs))
	buf = appendBulk(buf, "EVAL")
	buf = appendBulk(buf, gateLua)
	buf = appendBulkInt(buf, int64(len(gateKeys)))
	for _, a := range gateKeys {
		buf = appendBulk(buf, a)
	}
	for _, a := range gateArgs {
		buf = appendBulk(buf, a)
	}
	at := 0
	for _, sp := range w.spans {
		size := sp.to - sp.from + 1
		buf = appendHeader(buf, '*', 4)
		buf = appendBulk(buf, "SETRANGE")
		buf = appendBulk(buf, key)
		buf = appendBulkInt(buf, int64(sp.from))
		buf = appendBulk(buf, w.buf[at:at+size])
		at += size
	}
	buf = appendCommand(buf, "EVAL", ungateLua, "2", key, hold)
	return appendCommand(buf, "EXEC")
}

// close breaks the stream's connection, if it has one.
func (st *txStream) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sc != nil {
		st.sc.fail(fmt.Errorf("%w: closed", errStream))
		st.sc = nil
	}
}
