package server

import (
	"bufio"
	"io"
	"net"
	"time"

	"github.com/bloomery/bloom/internal/resp"
)

// A connection served by a goroutine of its own: the path on systems
// without the event loop, with the Redis backend (whose commands wait on
// the network), for listeners that give no socket, and with
// Config.GoroutinePerConn. The goroutine reads a command, runs it and
// writes the reply into the buffer, which is flushed when no pipelined
// command is waiting, so a pipeline costs one write. Pipelined BF
// and CF commands on one filter may run together (conn_run.go).

// ioBuffer is the size of the read buffer.
const ioBuffer = 16 << 10

// newStreamConn makes the connection nc, served by a goroutine (serve).
func (s *Server) newStreamConn(nc net.Conn, id int64) *conn {
	c := s.newConnState(id, nc.RemoteAddr(), nc.LocalAddr(), s.metrics.shards[0])
	c.nc = nc
	c.r = resp.NewReader(bufio.NewReaderSize(flushingReader{c}, ioBuffer), s.cfg.Limits)
	c.r.SetAuthRequired(!c.authed)
	c.w = resp.NewWriter(deadlineWriter{c})
	return c
}

// flush sends the replies written so far, once the changes they
// acknowledge are durable (makeDurable).
func (c *conn) flush() error {
	c.makeDurable(false, nil)
	c.writePushes()
	return c.w.Flush()
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

// Read sends what waits, then reads. While it blocks reading, a push for
// the connection (push.go) ends the read early; the pushes are sent and
// the read starts again.
func (r flushingReader) Read(p []byte) (int, error) {
	c := r.c
	for {
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
		if !c.parkForRead() {
			continue // pushes came meanwhile: send them first
		}
		n, err := c.nc.Read(p)
		if c.unpark(n, err) {
			continue
		}
		return n, err
	}
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

// serve runs the connection until the client leaves, a protocol error,
// an idle timeout, or shutdown.
func (c *conn) serve() {
	defer c.nc.Close()
	var args [][]byte
	for !c.quit {
		if c.r.Buffered() == 0 {
			c.clock = 0 // the read may wait
			if err := c.flush(); err != nil {
				c.ended(err)
				return
			}
		}
		var err error
		args, err = c.r.ReadCommand(args)
		if err != nil {
			c.endRun()
			if c.ended(err) {
				c.flush()
			}
			return
		}
		if c.srv.closing.Load() {
			c.endRun()
			c.error("ERR server is shutting down")
			c.flush()
			return
		}
		c.dispatchStream(args)
		if c.w.Buffered() > 64<<10 {
			if err := c.flush(); err != nil {
				c.ended(err)
				return
			}
		}
	}
	c.flush()
}
