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
// mirrored writes through go-redis, each once the one before is through.
//
// Errors: a write that did not reach Redis whole fails with errUnsent
// and goes again as a watched write; one whose reply was lost fails with
// errStream, and AddMany returns it. After a failed dial the stream
// refuses writes for dialPause.
type txStream struct {
	opt *redis.Options

	mu     sync.Mutex // guards the fields below; held while a transaction is written, so writes are in queue order
	sc     *streamConn
	down   time.Time // no dial before (dialPause after a failed one)
	closed bool
	dials  int       // connections made (tests)
	bufs   sync.Pool // of *[]byte
}

// streamConn is one connection of a stream and its writes in flight.
type streamConn struct {
	c     net.Conn
	rd    *bufio.Reader
	mu    sync.Mutex // guards queue, err, armed and the read deadline
	queue []*txReply
	err   error     // set once broken
	armed time.Time // when the read deadline was last set
}

// errStream is the error of a stream's connection (a read, a reply out
// of shape, the stream closed) while writes were in flight on it: they
// may or may not have run, so addMirrored returns the error, as AddMany
// does after a network error through go-redis. errUnsent is the error of
// a write that never reached Redis whole (a dial that failed, a stream
// broken or backing off before it, a write(2) that failed before EXEC
// was sent: Redis discards a transaction without EXEC when its
// connection closes), which addMirrored sends again as a watched write.
var (
	errStream = errors.New("redisfilter: mirrored writes' connection")
	errUnsent = errors.New("redisfilter: mirrored write not sent")
)

// dialPause is how long a stream whose dial failed refuses writes
// (errUnsent) before it dials again: a Redis that does not answer then
// costs each batch nothing, not a dial timeout each behind the lock.
const dialPause = time.Second

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
	// A Sentinel client (NewFailoverClient) is a *redis.Client whose
	// Dialer asks the sentinels for the master; its connections are
	// closed on a failover, and a stream's would not be: it could go on
	// writing to a demoted master. It keeps go-redis.
	if opt.Addr == "FailoverClient" || opt.Dialer == nil || opt.OnConnect != nil ||
		opt.CredentialsProviderContext != nil || opt.StreamingCredentialsProvider != nil {
		return nil
	}
	return &txStream{opt: opt}
}

// send writes one transaction (buf, encoded by appendTx, with sets
// SETRANGEs) after those sent before it; wait then waits for its reply.
// Callers that chain writes on each other send them in the order they
// merged them (under the lock that orders their merges). An error of
// send wraps errUnsent: the transaction did not run.
func (st *txStream) send(ctx context.Context, buf []byte, sets int) (*txReply, error) {
	r := &txReply{sets: sets, done: make(chan struct{})}
	st.mu.Lock()
	defer st.mu.Unlock()
	sc, err := st.conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnsent, err)
	}
	sc.mu.Lock()
	if sc.err != nil {
		err = sc.err
	} else {
		sc.queue = append(sc.queue, r)
		if d := st.opt.ReadTimeout; d > 0 && len(sc.queue) == 1 {
			sc.armDeadline(d) // idle until now: its reply is due within d
		}
	}
	sc.mu.Unlock()
	if err == nil {
		if d := st.opt.WriteTimeout; d > 0 {
			_ = sc.c.SetWriteDeadline(time.Now().Add(d))
		}
		if _, err = sc.c.Write(buf); err != nil {
			sc.fail(fmt.Errorf("%w: %w", errStream, err)) // the writes before r may have run
		}
	}
	if err != nil {
		st.sc = nil
		return nil, fmt.Errorf("%w: %w", errUnsent, err) // r's EXEC did not reach Redis whole
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
// the last broke, unless a dial failed less than dialPause ago or the
// stream is closed (st.mu held).
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
	switch {
	case st.closed:
		return nil, errors.New("the stream is closed")
	case time.Now().Before(st.down):
		return nil, errors.New("the last dial failed")
	}
	opt := st.opt
	dctx, cancel := context.WithTimeout(ctx, max(opt.DialTimeout, time.Second))
	defer cancel()
	c, err := opt.Dialer(dctx, opt.Network, opt.Addr)
	if err != nil {
		st.down = time.Now().Add(dialPause)
		return nil, fmt.Errorf("dial: %w", err)
	}
	sc := &streamConn{c: c, rd: bufio.NewReaderSize(c, 64<<10)}
	if err := sc.hello(dctx, opt); err != nil {
		c.Close()
		st.down = time.Now().Add(dialPause)
		return nil, err
	}
	st.dials++
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
// connection breaks. It is always reading, also with nothing in flight,
// so that a connection the server closed (an idle timeout, CLIENT KILL,
// a restart) is noticed then, and the next write dials again instead
// of writing into it.
//
// The read deadline is coarse: send arms it when a write finds nothing
// in flight, and read moves it on after a reply once half of it has
// passed, so a reply is awaited between timeout/2 and timeout. A deadline
// that passes with nothing in flight is not an error. Setting it at
// every write and reply cost 7% of stateless BF.ADD at -P 16: a new,
// earlier timer wakes Go's netpoller (docs/BENCHMARKS.md).
func (sc *streamConn) read(timeout time.Duration) {
	for {
		if _, err := sc.rd.Peek(1); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && sc.idleTimeout(timeout) {
				continue
			}
			sc.fail(fmt.Errorf("%w: %w", errStream, err))
			return
		}
		sc.mu.Lock()
		var r *txReply
		if len(sc.queue) > 0 {
			r = sc.queue[0]
		}
		sc.mu.Unlock()
		if r == nil {
			sc.fail(fmt.Errorf("%w: a reply with no write in flight", errStream))
			return
		}
		got := txReply{sets: r.sets} // parsed aside: fail may answer r meanwhile
		if err := got.parse(sc.rd); err != nil {
			sc.fail(fmt.Errorf("%w: %w", errStream, err))
			return
		}
		sc.mu.Lock()
		if sc.err != nil { // failed meanwhile: r is answered
			sc.mu.Unlock()
			return
		}
		sc.queue = sc.queue[1:]
		if timeout > 0 && len(sc.queue) > 0 && time.Since(sc.armed) > timeout/2 {
			sc.armDeadline(timeout)
		}
		sc.mu.Unlock()
		r.gate, r.gateEr, r.setErr, r.err = got.gate, got.gateEr, got.setErr, got.err
		close(r.done)
	}
}

// idleTimeout reports whether a read deadline that passed found nothing
// in flight (not an error), re-arming it for a write that came since.
func (sc *streamConn) idleTimeout(timeout time.Duration) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.queue) > 0 && time.Since(sc.armed) >= timeout {
		return false // a reply overdue
	}
	if len(sc.queue) > 0 {
		sc.armDeadline(timeout)
	} else {
		_ = sc.c.SetReadDeadline(time.Time{})
	}
	return true
}

// armDeadline sets the read deadline d from now (sc.mu held).
func (sc *streamConn) armDeadline(d time.Duration) {
	sc.armed = time.Now()
	_ = sc.c.SetReadDeadline(sc.armed.Add(d))
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

// The transactions are encoded here rather than with internal/resp's
// Writer: its Reset drops a buffer above 64 KiB (right for a
// connection's replies), and a batch of 1024 BF.MADD items makes a
// transaction of about that size, so a pooled Writer would grow its
// buffer anew for most batches. (Tried: BF.MADD of 10 at -P 16 ran at
// 0.88x in one three-round run, within this machine's scatter.)

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

// appendTx appends a mirrored write's transaction to buf: MULTI,
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

// close breaks the stream's connection, if it has one, for good: later
// writes are refused (errUnsent) and go through go-redis.
func (st *txStream) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	if st.sc != nil {
		st.sc.fail(fmt.Errorf("%w: closed", errStream))
		st.sc = nil
	}
}
