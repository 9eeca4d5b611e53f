package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/bloomery/bloom/cuckoo"
	"github.com/bloomery/bloom/internal/resp"
)

// conn is one client connection: its protocol state and the replies it
// has to send. It is served either by a goroutine of its own (nc is set;
// conn_stream.go) or by an event loop (lc is set; loop_linux.go). Either
// way one goroutine at a time runs its commands: the replies go into w,
// a buffer that reaches the client only after the changes they
// acknowledge are durable (flush, or the loop's end of iteration).
type conn struct {
	srv     *Server
	r       *resp.Reader
	w       *resp.Writer
	ctx     context.Context
	id      int64
	created time.Time
	remote  net.Addr
	local   net.Addr
	shard   *statShard // where its commands are counted
	// clock is when the last command of the input being run ended, as a
	// duration since the server started: the next command's start, so
	// that timing a command reads the clock once (0: read it; reset
	// wherever the connection may have waited).
	clock time.Duration
	// lastCmd is the command table's entry for the connection's last
	// command name: a client mostly repeats one, and comparing its name
	// costs less than the table's map (2% of BF.ADD's CPU at -P 16).
	lastCmd *command

	authed bool
	name   string
	lib    [2]string // CLIENT SETINFO lib-name, lib-ver

	trk    trackState  // CLIENT TRACKING (tracking.go)
	box    pushBox     // pushes from other connections (push.go)
	tx     *txState    // MULTI's queue; nil outside a transaction (cmd_multi.go)
	inExec bool        // EXEC runs the queue
	resp3  atomic.Bool // HELLO 3 was answered: read by other connections
	gone   atomic.Bool // closed: a redirect to it is broken

	unlogged []replySpan // replies of write commands not yet known durable
	errs     int64       // error replies written
	quit     bool        // close after flushing
	bools    []bool
	results  []addResult
	create   createOpts // scratch of defaultCreate
	cfRes    []cuckoo.Status
	cfCreate cuckooOpts // scratch of the CF.* adds' creation options
	pipe     connRun    // pipelined commands gathered (conn_run.go)
	lastKey  string     // the key of its last filter command (filterKey)

	// A connection served by a goroutine.
	nc              net.Conn
	readBy, writeBy deadline // its deadlines

	// A connection served by an event loop.
	lc *loopConn
}

// newConnState makes the protocol state of a connection from remote to
// local; the caller adds the reader, the writer and the transport.
func (s *Server) newConnState(id int64, remote, local net.Addr, shard *statShard) *conn {
	return &conn{srv: s, ctx: s.ctx, id: id, created: time.Now(), remote: remote, local: local, shard: shard,
		authed: s.cfg.RequirePass == ""}
}

// replySpan is where one write command's reply sits in the buffer.
type replySpan struct{ start, end int }

// makeDurable makes the changes of the commands answered so far durable
// as the fsync policy promises (written to the OS; with appendfsync
// always, on disk), so their replies may go. When the log cannot be
// written, the write commands' replies become the MISCONF error (their
// records stay queued for the next write); the others go as they are.
// An event loop that has already waited for the log passes its outcome
// as done (and err).
func (c *conn) makeDurable(done bool, err error) {
	if len(c.unlogged) == 0 {
		return
	}
	if !done {
		err = c.srv.persist.waitDurable()
	}
	if err != nil {
		c.refuseUnlogged(logErrorReply(err))
	}
	c.unlogged = c.unlogged[:0]
}

// refuseUnlogged replaces the buffered replies of write commands with msg.
func (c *conn) refuseUnlogged(msg replyError) {
	old := append([]byte(nil), c.w.Bytes()...)
	c.w.Reset()
	at := 0
	for _, s := range c.unlogged {
		c.w.Raw(old[at:s.start])
		c.fail(msg)
		at = s.end
	}
	c.w.Raw(old[at:])
}

// ended handles the error that ends a connection: of its input, or of
// sending its replies. It reports whether an error reply is to be sent
// before closing (a protocol error's, written to c.w).
func (c *conn) ended(err error) bool {
	var pe *resp.ProtocolError
	var we writeError
	switch {
	case errors.As(err, &we):
		if errors.Is(err, os.ErrDeadlineExceeded) && !c.srv.closing.Load() {
			c.srv.log.Info("client did not read its replies; closing connection", "client", c.id,
				"addr", c.remote, "write_timeout", c.srv.cfg.WriteTimeout)
		}
	case errors.As(err, &pe):
		c.srv.metrics.protocolErrors.Inc()
		c.srv.log.Info("protocol error; closing connection", "client", c.id, "addr", c.remote, "err", pe.Error())
		c.error("ERR " + pe.Error())
		return true
	case errors.Is(err, resp.ErrQueryBufferLimit):
		c.srv.metrics.protocolErrors.Inc()
		c.srv.log.Warn("query buffer limit reached; closing connection", "client", c.id, "addr", c.remote)
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.srv.log.Debug("idle client timed out", "client", c.id)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
	default:
		c.srv.log.Log(c.ctx, slog.LevelDebug, "read failed", "client", c.id, "err", err)
	}
	return false
}

// writeError is a failure to send replies to the client.
type writeError struct{ err error }

func (e writeError) Error() string { return "write: " + e.err.Error() }
func (e writeError) Unwrap() error { return e.err }

// Reply helpers.

func (c *conn) error(msg string) {
	c.errs++
	c.srv.stats.errorReplies.Add(1)
	c.w.Error(msg)
}

// fail writes err's reply (see wireError).
func (c *conn) fail(err error) { c.error(wireError(err)) }

func (c *conn) ok() { c.w.SimpleString("OK") }

// resultsFor returns a reusable []addResult of length n.
func (c *conn) resultsFor(n int) []addResult {
	if cap(c.results) < n {
		c.results = make([]addResult, n)
	}
	return c.results[:n]
}

// boolsFor returns a reusable []bool of length n.
func (c *conn) boolsFor(n int) []bool {
	if cap(c.bools) < n {
		c.bools = make([]bool, n)
	}
	return c.bools[:n]
}
