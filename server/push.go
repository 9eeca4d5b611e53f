package server

import (
	"errors"
	"os"
	"sync"
	"time"
)

// Push messages: what one connection sends to another outside of its
// replies (RESP3 ">" frames). Client-side caching's invalidations
// (tracking.go) are the only kind: a write on one connection tells the
// connections that may have cached the key.
//
// A connection's replies are written by the goroutine that runs its
// commands, so a push is not written by the goroutine that causes it: it
// goes into the target's mailbox (pushBox), and the target is woken to
// write it. A connection served by an event loop is handed to its loop
// (eventLoop.notify), which writes the mailbox with the connection's
// next replies. A connection served by a goroutine writes its mailbox
// before each read from the network (flush); when that goroutine is
// blocked reading, the read is ended early with a past deadline (kick),
// and flushingReader.Read takes the pushes and reads again.
//
// A mailbox holds at most maxPushKeys keys: past that, its invalidations
// collapse into one "invalidate everything" (a null key list, as Redis
// sends on FLUSHALL), which a client must honour by dropping its whole
// cache. So a client that does not read cannot make the server hold
// memory without limit.

// maxPushKeys bounds the keys waiting in one mailbox.
const maxPushKeys = 64 << 10

// pushBox is a connection's mailbox. Its lock is taken under a keyspace
// shard's lock (expiry invalidates) and under the tracker's; nothing is
// locked under it but the event loop's inbox.
type pushBox struct {
	mu      sync.Mutex
	keys    []string // keys to invalidate, in order
	all     bool     // invalidate everything (a flush, or too many keys)
	broken  int64    // a redirect target that went away: its id, to report once
	waiting bool     // something is in the box and the owner has been woken
	idle    bool     // a goroutine-served owner is blocked reading the network
	kicked  bool     // its read deadline was moved to wake it
}

// pushInvalidate puts keys (nil: every key) into c's mailbox and wakes c.
func (c *conn) pushInvalidate(keys []string) {
	b := &c.box
	b.mu.Lock()
	switch {
	case keys == nil || len(b.keys)+len(keys) > maxPushKeys:
		b.all, b.keys = true, nil
	case !b.all:
		b.keys = append(b.keys, keys...)
	}
	c.wakeLocked()
	b.mu.Unlock()
}

// pushRedirectBroken tells c that its invalidations' redirect target,
// client id, is gone.
func (c *conn) pushRedirectBroken(id int64) {
	c.box.mu.Lock()
	c.box.broken = id
	c.wakeLocked()
	c.box.mu.Unlock()
}

// wakeLocked makes c's owner write its mailbox soon. The caller holds
// c.box.mu.
func (c *conn) wakeLocked() {
	b := &c.box
	if b.waiting {
		return
	}
	b.waiting = true
	switch {
	case c.lc != nil:
		c.lc.loop.notify(c.lc)
	case b.idle && !b.kicked:
		b.kicked = true
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
}

// writePushes writes the mailbox into c's replies: RESP3 push frames, in
// the order they came. A RESP2 connection has no way to receive them
// (Redis would need a redirect to a subscribed connection), so they are
// dropped, as Redis drops them. Called by the goroutine that owns c.
func (c *conn) writePushes() {
	b := &c.box
	b.mu.Lock()
	if !b.waiting {
		b.mu.Unlock()
		return
	}
	keys, all, broken := b.keys, b.all, b.broken
	b.keys, b.all, b.broken, b.waiting = nil, false, 0, false
	b.mu.Unlock()
	if c.w.Protocol() != 3 {
		return
	}
	if broken != 0 {
		c.w.PushHeader(2)
		c.w.BulkString("tracking-redir-broken")
		c.w.Integer(broken)
	}
	if all {
		c.w.PushHeader(2)
		c.w.BulkString("invalidate")
		c.w.NullArray()
		return
	}
	for _, k := range keys {
		c.w.PushHeader(2)
		c.w.BulkString("invalidate")
		c.w.ArrayHeader(1)
		c.w.BulkString(k)
	}
}

// parkForRead marks a goroutine-served c as about to block reading the
// network, so that a push wakes it; it reports false (and does not park)
// when pushes are already waiting: write them first.
func (c *conn) parkForRead() bool {
	b := &c.box
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting {
		return false
	}
	b.idle = true
	return true
}

// unpark ends parkForRead after the read returned err; it reports
// whether the read was ended by a push's kick rather than by the client
// or a deadline of the connection's own. A kicked connection's read
// deadline is restored.
func (c *conn) unpark(n int, err error) bool {
	b := &c.box
	b.mu.Lock()
	kicked := b.kicked
	b.idle, b.kicked = false, false
	b.mu.Unlock()
	if !kicked {
		return false
	}
	c.readBy = deadline{} // the next extend sets it again
	if c.srv.cfg.IdleTimeout <= 0 {
		c.nc.SetReadDeadline(time.Time{})
	}
	return n == 0 && errors.Is(err, os.ErrDeadlineExceeded)
}
