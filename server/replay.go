package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/resp"
)

// replayer is the loader of the memory backend (persist.go): snapshot
// keys go straight into a loading memstore; log records run through the
// command table's own handlers, on a connection of a server that exists
// only for that, so a record means exactly what the command means to a
// client. The records are the canonical forms the memstore journals:
// journaled lists them; anything else is a corrupt log.
//
// A record that runs but answers an error is one of two things. "ERR
// item exists" (BF.RESERVE), "ERR not found" (BF.INSERT … NOCREATE,
// BF.LOADCHUNK) and "ERR no such key" (RENAME) can only be a change the
// snapshot already holds (the log records only changes that were made),
// and skipping it gives the same state. Any other error stops the
// loading: a malformed record, or a filter beyond the per-filter limit
// (errNoMemory, which tells the operator to start with larger limits).
type replayer struct {
	m    *memstore
	c    *conn
	cmds table
	add  [5][]byte // a short add's insert (shortAdds)
}

// journaled are the commands a log may hold (memstore's canonical forms).
var journaled = map[string]bool{
	"bf.reserve": true, "bf.insert": true, "bf.loadchunk": true,
	"cf.reserve": true, "cf.insert": true, "cf.del": true, "cf.compact": true, "cf.loadchunk": true,
	"bf.add": true, "cf.add": true, // shortAdds
	"del": true, "rename": true, "pexpireat": true, "persist": true, "flushall": true,
}

// shortAdds are the records of an add of one item to a filter that
// existed (memstore's logAdded, memCuckoo's logAdd), by the insert they
// stand for: BF.ADD key item is BF.INSERT key NOCREATE ITEMS item, and
// CF.ADD likewise. NOCREATE keeps what the longer form meant: a replay
// never makes a filter from an add that did not make one.
var shortAdds = map[string][]byte{"bf.add": wordInsert, "cf.add": wordCFInsert}

// newReplayer makes the loader of m, running records through cmds.
func newReplayer(m *memstore, cmds table) *replayer {
	r := &replayer{m: m, cmds: cmds}
	srv := &Server{backend: m, keys: m, bloom: m, cuckoo: memCuckoo{m}, cmds: cmds, log: slog.New(slog.DiscardHandler)}
	r.c = &conn{srv: srv, ctx: context.Background(), w: resp.NewWriter(io.Discard), authed: true}
	return r
}

func (r *replayer) maxFilterBytes() uint64 { return r.m.maxFilter }

func (r *replayer) restore(key string, v snapValue, expireAt int64) error {
	if v.cf != nil {
		return r.m.restoreCuckoo(key, v.cf, expireAt)
	}
	return r.m.restore(key, v.bf, expireAt)
}

func (r *replayer) restoreState(key []byte, sl *bloom.StateLoader, state []byte, expireAt int64) error {
	return r.m.restoreState(key, sl, state, expireAt)
}

// apply runs one record (see replayer).
func (r *replayer) apply(args [][]byte) error {
	if len(args) == 0 {
		return fmt.Errorf("server: replay: empty record")
	}
	name := strings.ToLower(string(args[0]))
	cmd := r.cmds.lookup(args[0])
	if cmd == nil || !journaled[name] {
		return fmt.Errorf("server: replay: unknown command %q", truncate(strings.ToUpper(string(args[0])), 64))
	}
	if !cmd.arityOK(len(args)) {
		return fmt.Errorf("server: replay: malformed %s record (%d arguments)", strings.ToUpper(name), len(args))
	}
	if insert, ok := shortAdds[name]; ok {
		r.add = [5][]byte{insert, args[1], wordNoCreate, wordItems, args[2]}
		args = r.add[:]
		cmd = r.cmds.lookup(insert)
	}
	cmd.run(r.c, args)
	msg := firstError(r.c.w.Bytes())
	r.c.w.Reset()
	switch msg {
	case "", string(errItemExists), string(errNotFound), string(errNoSuchKey):
		return nil // see replayer: a change the snapshot already holds
	case string(errNoMemory):
		return fmt.Errorf("server: replay: %s: %w", strings.ToUpper(name), errNoMemory)
	}
	return fmt.Errorf("server: replay: %s: %s", strings.ToUpper(name), msg)
}

// firstError returns the text of the first error in a reply: the reply
// itself, or an element of its array (the replies of the journaled
// commands hold no strings a client chose, so a line that starts with
// '-' is an error).
func firstError(reply []byte) string {
	for len(reply) > 0 {
		line, rest, _ := bytes.Cut(reply, []byte("\r\n"))
		if len(line) > 0 && line[0] == '-' {
			return string(line[1:])
		}
		reply = rest
	}
	return ""
}
