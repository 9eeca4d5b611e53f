package server

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Client-side caching (CLIENT TRACKING), as Redis 7 does it: a client
// with tracking on may keep replies in a cache of its own, and the server
// tells it, with an "invalidate" push (push.go), when a key it read may
// have changed. docs/SERVER.md, "Client-side caching", lists the modes.
//
// Invalidation happens at the command level, so every backend has it:
// after a write command (flagWrite) the keys at its key positions are
// invalidated, whether or not the command changed them (as Redis does
// for module commands, which signal every key opened for writing);
// FLUSHALL and FLUSHDB (flagAllKeys) invalidate everything; the memory
// backend's keyspace reports the keys it deletes because they expired.
// Keys changed in the Redis behind the Redis backend by other clients of
// that Redis, or expired there, are not seen.
//
// In the default (and OPTIN/OPTOUT) mode the server remembers, for each
// key a tracking client read (flagReadonly), which clients read it; an
// invalidation sends the key to them and forgets it, until they read it
// again. In BCAST mode a client is told of every key changed under its
// prefixes, without remembering anything. At most maxTrackedKeys keys
// are remembered: past that, keys are invalidated (and forgotten) to make
// room, as Redis does with tracking-table-max-keys.
//
// Concurrency: the tracker's state, and the fields of each connection's
// trackState that other connections read (all but caching), change under
// mu; a connection reads its own trackState without it. mu is taken
// under a keyspace shard's lock (expiry) and is held while mailboxes are
// filled.

// maxTrackedKeys bounds the keys the tracking table remembers (Redis's
// tracking-table-max-keys default).
const maxTrackedKeys = 1_000_000

// tracker is the server's tracking table.
type tracker struct {
	active atomic.Int32 // connections with tracking on: none, no work

	mu      sync.Mutex
	keys    map[string][]int64 // key → ids of the clients that read it
	clients map[int64]*conn    // connections with tracking on
	bcast   map[int64]*conn    // those of them in BCAST mode
	maxKeys int                // 0: maxTrackedKeys
}

// trackState is one connection's CLIENT TRACKING mode.
type trackState struct {
	on, bcast, optin, optout, noloop bool

	caching  bool     // CLIENT CACHING given for the next command (or transaction)
	redirect *conn    // where its invalidations go; nil: to itself
	prefixes []string // BCAST: the prefixes ("" for every key)
	broken   bool     // the redirect target went away (reported once)
}

// enable turns tracking on for c with st (already checked), keeping the
// prefixes it had.
func (t *tracker) enable(c *conn, st trackState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clients == nil {
		t.clients, t.bcast = map[int64]*conn{}, map[int64]*conn{}
		t.keys = map[string][]int64{}
	}
	if !c.trk.on {
		t.active.Add(1)
		t.clients[c.id] = c
	}
	st.prefixes = append(c.trk.prefixes, st.prefixes...)
	if st.bcast && len(st.prefixes) == 0 {
		st.prefixes = []string{""}
	}
	slices.Sort(st.prefixes) // CLIENT TRACKINGINFO lists them in order, as Redis's radix tree
	c.trk = st
	if st.bcast {
		t.bcast[c.id] = c
	}
}

// disable turns tracking off for c (CLIENT TRACKING OFF, or c closed).
func (t *tracker) disable(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !c.trk.on {
		return
	}
	c.trk = trackState{}
	delete(t.clients, c.id)
	delete(t.bcast, c.id)
	if t.active.Add(-1) == 0 {
		clear(t.keys) // every id in it is gone
	}
}

// remember notes that c read keys and may cache the replies.
func (t *tracker) remember(c *conn, keys []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		ids, ok := t.keys[k]
		if !ok && len(t.keys) >= t.limit() {
			t.evictLocked()
		}
		if !containsID(ids, c.id) {
			t.keys[k] = append(ids, c.id)
		}
	}
}

func (t *tracker) limit() int {
	if t.maxKeys > 0 {
		return t.maxKeys
	}
	return maxTrackedKeys
}

// evictLocked invalidates one remembered key (the map's order is random)
// to make room for another.
func (t *tracker) evictLocked() {
	for k := range t.keys {
		t.invalidateLocked(nil, k)
		return
	}
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// invalidate tells the clients that read keys, or watch them with BCAST,
// that they changed; from is the connection that changed them (nil: the
// server, for expiry), which NOLOOP clients are not told about.
func (t *tracker) invalidate(from *conn, keys []string) {
	if t.active.Load() == 0 || len(keys) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		t.invalidateLocked(from, k)
	}
}

func (t *tracker) invalidateLocked(from *conn, key string) {
	if ids, ok := t.keys[key]; ok {
		delete(t.keys, key)
		for _, id := range ids {
			c := t.clients[id]
			if c != nil && !c.trk.bcast && !(c == from && c.trk.noloop) {
				t.sendLocked(c, []string{key})
			}
		}
	}
	for _, c := range t.bcast {
		if !(c == from && c.trk.noloop) && hasPrefix(key, c.trk.prefixes) {
			t.sendLocked(c, []string{key})
		}
	}
}

// invalidateAll tells every tracking client to drop its whole cache
// (FLUSHALL, FLUSHDB) and forgets every key, as Redis does: NOLOOP does
// not apply.
func (t *tracker) invalidateAll() {
	if t.active.Load() == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.keys)
	for _, c := range t.clients {
		t.sendLocked(c, nil)
	}
}

// sendLocked puts keys (nil: everything) into the mailbox of c's
// invalidation target; a target that went away is reported to c once.
func (t *tracker) sendLocked(c *conn, keys []string) {
	dst := c
	if c.trk.redirect != nil {
		dst = c.trk.redirect
		if dst.gone.Load() {
			if !c.trk.broken {
				c.trk.broken = true
				c.pushRedirectBroken(dst.id)
			}
			return
		}
	}
	dst.pushInvalidate(keys)
}

func hasPrefix(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// afterCommand does tracking's work for cmd, which just ran on c: it
// invalidates what a write command may have changed, remembers what a
// tracking client read, and ends a CLIENT CACHING that applied to this
// command.
func (c *conn) afterCommand(cmd *command, args [][]byte) {
	t := &c.srv.track
	if cmd.flags&flagWrite != 0 {
		if cmd.flags&flagAllKeys != 0 {
			t.invalidateAll()
		} else {
			t.invalidate(c, cmd.keysOf(args))
		}
	}
	if !c.trk.on {
		return
	}
	// OPTIN remembers only after CACHING YES, OPTOUT all but after
	// CACHING NO.
	skip := c.trk.bcast || (c.trk.optin && !c.trk.caching) || (c.trk.optout && c.trk.caching)
	if cmd.flags&flagReadonly != 0 && !skip {
		t.remember(c, cmd.keysOf(args))
	}
	// As Redis: CLIENT's subcommands and a transaction keep it.
	if c.tx == nil && !c.inExec && !strings.HasPrefix(cmd.name, "client|") {
		c.trk.caching = false
	}
}

// keysOf returns the keys of a call of cmd, from its key positions.
func (cmd *command) keysOf(args [][]byte) []string {
	first, last, step := cmd.keys[0], cmd.keys[1], cmd.keys[2]
	if first <= 0 || step <= 0 || first >= len(args) {
		return nil
	}
	if last < 0 {
		last += len(args)
	}
	last = min(last, len(args)-1)
	keys := make([]string, 0, (last-first)/step+1)
	for i := first; i <= last; i += step {
		keys = append(keys, string(args[i]))
	}
	return keys
}
