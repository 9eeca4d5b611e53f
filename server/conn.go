package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/bloomery/bloom/internal/resp"
)

// conn is one client connection. Its goroutine reads a command, runs it
// and writes the reply into a buffer that is flushed when no pipelined
// command is waiting, so a pipeline costs one write.
type conn struct {
	srv     *Server
	nc      net.Conn
	r       *resp.Reader
	w       *resp.Writer
	ctx     context.Context
	id      int64
	created time.Time

	authed bool
	name   string
	lib    [2]string // CLIENT SETINFO lib-name, lib-ver

	readBy, writeBy deadline // the connection's deadlines

	unlogged []replySpan // replies of write commands not yet known durable
	errs     int64       // error replies written
	quit     bool        // close after flushing
	bools    []bool
}

// ioBuffer is the size of the read buffer.
const ioBuffer = 16 << 10

func (s *Server) newConn(nc net.Conn, id int64) *conn {
	c := &conn{srv: s, nc: nc, ctx: s.ctx, id: id, created: time.Now(), authed: s.cfg.RequirePass == ""}
	c.r = resp.NewReader(bufio.NewReaderSize(flushingReader{c}, ioBuffer), s.cfg.Limits)
	c.r.SetAuthRequired(!c.authed)
	c.w = resp.NewWriter(deadlineWriter{c})
	return c
}

// flushingReader is the connection's input: before each read from the
// network (the commands buffered so far are answered, and the reader may
// block) it sends the replies waiting, so a client never waits for the
// reply to a command while the server waits for the rest of the next one.
//
// The idle timeout is set before each read, so it counts from the last
// byte received (and the last reply sent): a client uploading a large
// argument slowly is not idle. After Shutdown began, reads end at once.
type flushingReader struct{ c *conn }

func (r flushingReader) Read(p []byte) (int, error) {
	c := r.c
	if err := c.flush(); err != nil {
		return 0, err
	}
	if t := c.srv.cfg.IdleTimeout; t > 0 {
		c.readBy.extend(c.nc.SetReadDeadline, t, time.Now())
	}
	// Checked after setting the deadline: Shutdown sets closing before
	// it ends reads with a deadline of its own, which this one must not
	// override.
	if c.srv.closing.Load() {
		return 0, io.EOF
	}
	return c.nc.Read(p)
}

// deadlineWriter is the connection's output: each write of at most
// writeChunk bytes must be taken by the client within WriteTimeout (or,
// once Shutdown began, by its cutoff), so a client that does not read
// its replies is closed rather than holding its goroutine forever.
type deadlineWriter struct{ c *conn }

// writeChunk bounds one write, so that WriteTimeout bounds a stall, not
// the time to send a large reply.
const writeChunk = 256 << 10

func (w deadlineWriter) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		w.c.setWriteDeadline()
		m, err := w.c.nc.Write(p[n:min(len(p), n+writeChunk)])
		n += m
		if err != nil {
			return n, writeError{err}
		}
	}
	return n, nil
}

// setWriteDeadline gives the next write WriteTimeout, or what is left of
// Shutdown's grace.
func (c *conn) setWriteDeadline() {
	c.writeBy.extend(c.nc.SetWriteDeadline, c.srv.cfg.WriteTimeout, time.Now())
	// Checked after setting the deadline, for the reason given in
	// flushingReader.Read: Shutdown stores the cutoff before it sets it.
	if cut := c.srv.writeCutoff.Load(); cut != 0 && c.writeBy.at.UnixNano() > cut {
		c.writeBy.at = time.Unix(0, cut)
		c.nc.SetWriteDeadline(c.writeBy.at)
	}
}

// deadline is one of a connection's deadlines, moved only when less than
// 7/8 of its timeout is left: a timeout of d then fires after 7/8 d to d
// without progress, and a busy connection pays for setting it (about 180
// ns, against about 3 µs for a write) once per d/8 rather than per read
// or write.
type deadline struct{ at time.Time }

func (dl *deadline) extend(set func(time.Time) error, d time.Duration, now time.Time) {
	if dl.at.Sub(now) < d-d/8 {
		dl.at = now.Add(d)
		set(dl.at)
	}
}

// writeError is a failure to send replies to the client.
type writeError struct{ err error }

func (e writeError) Error() string { return "write: " + e.err.Error() }
func (e writeError) Unwrap() error { return e.err }

// serve runs the connection until the client leaves, a protocol error,
// an idle timeout, or shutdown.
func (c *conn) serve() {
	defer c.nc.Close()
	var args [][]byte
	for !c.quit {
		if c.r.Buffered() == 0 {
			if err := c.flush(); err != nil {
				c.ended(err)
				return
			}
		}
		var err error
		args, err = c.r.ReadCommand(args)
		if err != nil {
			c.ended(err)
			return
		}
		if c.srv.closing.Load() {
			c.error("ERR server is shutting down")
			c.flush()
			return
		}
		c.dispatch(args)
		if c.w.Buffered() > 64<<10 {
			if err := c.flush(); err != nil {
				c.ended(err)
				return
			}
		}
	}
	c.flush()
}

// replySpan is where one write command's reply sits in the buffer.
type replySpan struct{ start, end int }

// flush makes the changes of the commands answered so far durable as the
// fsync policy promises (written to the OS; with appendfsync always, on
// disk), then sends their replies. Nothing reaches the client before:
// the writer holds every reply until Flush. When the log cannot be
// written, the write commands' replies become the MISCONF error (their
// records stay queued for the next write), the others go as they are.
func (c *conn) flush() error {
	if len(c.unlogged) > 0 {
		if err := c.srv.persist.waitDurable(); err != nil {
			c.refuseUnlogged(logErrorReply(err))
		}
		c.unlogged = c.unlogged[:0]
	}
	return c.w.Flush()
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
// sending its replies.
func (c *conn) ended(err error) {
	var pe *resp.ProtocolError
	var we writeError
	switch {
	case errors.As(err, &we):
		if errors.Is(err, os.ErrDeadlineExceeded) && !c.srv.closing.Load() {
			c.srv.log.Info("client did not read its replies; closing connection", "client", c.id,
				"addr", c.nc.RemoteAddr(), "write_timeout", c.srv.cfg.WriteTimeout)
		}
	case errors.As(err, &pe):
		c.srv.metrics.protocolErrors.Inc()
		c.srv.log.Info("protocol error; closing connection", "client", c.id, "addr", c.nc.RemoteAddr(), "err", pe.Error())
		c.error("ERR " + pe.Error())
		c.flush()
	case errors.Is(err, resp.ErrQueryBufferLimit):
		c.srv.metrics.protocolErrors.Inc()
		c.srv.log.Warn("query buffer limit reached; closing connection", "client", c.id, "addr", c.nc.RemoteAddr())
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.srv.log.Debug("idle client timed out", "client", c.id)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
	default:
		c.srv.log.Log(c.ctx, slog.LevelDebug, "read failed", "client", c.id, "err", err)
	}
}

// Reply helpers.

func (c *conn) error(msg string) {
	c.errs++
	c.srv.stats.errorReplies.Add(1)
	c.w.Error(msg)
}

// fail writes err's reply (see wireError).
func (c *conn) fail(err error) { c.error(wireError(err)) }

func (c *conn) ok() { c.w.SimpleString("OK") }

// boolsFor returns a reusable []bool of length n.
func (c *conn) boolsFor(n int) []bool {
	if cap(c.bools) < n {
		c.bools = make([]bool, n)
	}
	return c.bools[:n]
}
