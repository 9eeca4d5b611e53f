package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// replay applies one journaled command (the canonical forms memstore
// writes) without journaling it again and without memory limits, so that
// a log written under larger limits still loads. A command that cannot be
// parsed is an error: the log is corrupt. A command that parses but fails
// (BF.RESERVE of a key that exists, RENAME of a missing key) is not: the
// log records only changes that were made, so such a failure can only be
// a change already in the snapshot, and skipping it is the same state.
func (m *memstore) replay(args [][]byte) error {
	if len(args) == 0 {
		return fmt.Errorf("server: replay: empty command")
	}
	ctx := context.Background()
	name := strings.ToUpper(string(args[0]))
	bad := func() error {
		return fmt.Errorf("server: replay: malformed %s command (%d arguments)", name, len(args))
	}
	var err error
	switch name {
	case "BF.RESERVE":
		if len(args) < 4 || len(args) > 7 {
			return bad()
		}
		o, perr := parseReserve(args)
		if perr != "" {
			return fmt.Errorf("server: replay: %s: %s", name, perr)
		}
		err = m.Reserve(ctx, string(args[1]), o)
	case "BF.INSERT":
		if len(args) < 4 {
			return bad()
		}
		req, perr := parseInsert(args)
		if perr != "" {
			return fmt.Errorf("server: replay: %s: %s", name, perr)
		}
		var create *createOpts
		if !req.noCreate {
			create = &req.create
		}
		_, err = m.Add(ctx, string(args[1]), req.items, create, make([]bool, len(req.items)))
	case "BF.LOADCHUNK":
		if len(args) != 4 {
			return bad()
		}
		it, perr := strconv.ParseInt(string(args[2]), 10, 64)
		if perr != nil {
			return bad()
		}
		err = m.LoadChunk(ctx, string(args[1]), it, args[3])
	case "DEL":
		if len(args) < 2 {
			return bad()
		}
		_, err = m.Delete(ctx, keyStrings(args[1:]))
	case "RENAME":
		if len(args) != 3 {
			return bad()
		}
		err = m.Rename(ctx, string(args[1]), string(args[2]))
	case "PEXPIREAT":
		if len(args) != 3 {
			return bad()
		}
		at, perr := strconv.ParseInt(string(args[2]), 10, 64)
		if perr != nil {
			return bad()
		}
		_, err = m.PExpireAt(ctx, string(args[1]), at, expireAlways)
	case "PERSIST":
		if len(args) != 2 {
			return bad()
		}
		_, err = m.Persist(ctx, string(args[1]))
	case "FLUSHALL":
		err = m.Flush(ctx)
	default:
		return fmt.Errorf("server: replay: unknown command %q", name)
	}
	switch err {
	case errItemExists, errNotFound, errNoSuchKey:
		return nil // see above: a change the snapshot already holds
	}
	if err != nil {
		return fmt.Errorf("server: replay: %s: %w", name, err)
	}
	return nil
}

// keyStrings copies arguments into strings.
func keyStrings(args [][]byte) []string {
	keys := make([]string, len(args))
	for i, a := range args {
		keys[i] = string(a)
	}
	return keys
}
