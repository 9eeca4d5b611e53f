package server

import (
	"crypto/subtle"
	"fmt"
	"strings"
	"time"
)

// Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, CLIENT
// (its tracking subcommands are in cmd_tracking.go, NO-EVICT and
// NO-TOUCH in cmd_setup.go).

func connCommands() []*command {
	return []*command{
		{name: "ping", arity: -1, flags: flagFast | flagLoading, run: cmdPing},
		{name: "echo", arity: 2, flags: flagFast | flagLoading, run: func(c *conn, args [][]byte) { c.w.Bulk(args[1]) }},
		{name: "hello", arity: -1, flags: flagNoAuth | flagFast | flagLoading, run: cmdHello},
		{name: "auth", arity: -2, flags: flagNoAuth | flagFast | flagLoading, run: cmdAuth},
		{name: "select", arity: 2, flags: flagFast | flagLoading, run: cmdSelect},
		{name: "quit", arity: -1, flags: flagNoAuth | flagFast | flagLoading | flagTxControl, run: func(c *conn, _ [][]byte) { c.ok(); c.quit = true }},
		{name: "client", arity: -2, run: nil, subs: subcommands("CLIENT", append(append([]*command{
			{name: "setname", arity: 3, flags: flagLoading, run: cmdClientSetName},
			{name: "getname", arity: 2, flags: flagLoading, run: cmdClientGetName},
			{name: "id", arity: 2, flags: flagLoading, run: func(c *conn, _ [][]byte) { c.w.Integer(c.id) }},
			{name: "setinfo", arity: 4, flags: flagLoading, run: cmdClientSetInfo},
			{name: "info", arity: 2, flags: flagLoading, run: func(c *conn, _ [][]byte) { c.w.Verbatim("txt", []byte(c.describe(time.Now())+"\n")) }},
		}, trackingCommands()...), clientSetupCommands()...)...)},
	}
}

func cmdPing(c *conn, args [][]byte) {
	switch len(args) {
	case 1:
		c.w.SimpleString("PONG")
	case 2:
		c.w.Bulk(args[1])
	default:
		c.error("ERR wrong number of arguments for 'ping' command")
	}
}

func cmdSelect(c *conn, args [][]byte) {
	switch n, ok := parseInt(args[1]); {
	case !ok:
		c.error("ERR value is not an integer or out of range")
	case n != 0:
		c.error("ERR DB index is out of range")
	default:
		c.ok()
	}
}

// checkPassword authenticates c with user and pass; the only user is
// "default" (case-sensitive, as Redis's user names), as in Redis without
// ACLs. Without RequirePass that user has no password, and any password
// is accepted for it, as Redis does.
func (c *conn) checkPassword(user, pass []byte) bool {
	want := c.srv.cfg.RequirePass
	ok := string(user) == "default" && (want == "" || subtle.ConstantTimeCompare(pass, []byte(want)) == 1)
	if ok {
		c.authed = true
		c.r.SetAuthRequired(false)
	} else {
		c.authFailed()
	}
	return ok
}

// authFailed counts a failed authentication (INFO acl_access_denied_auth,
// the auth_failures_total metric) and logs it at most once a second: the
// line names the last client and counts the failures since the previous
// line (a client trying passwords in a loop wrote 25.7 MB/s of log).
func (c *conn) authFailed() {
	c.srv.stats.authFailures.Add(1)
	c.srv.metrics.authFailures.Inc()
	if ok, n := c.srv.authLog.event(time.Now()); ok {
		c.srv.log.Warn("authentication failed", "client", c.id, "addr", c.remote, "failures", n)
	}
}

const (
	errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."
	errNoPass    = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
)

func cmdAuth(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.error("ERR syntax error")
		return
	}
	user, pass := []byte("default"), args[1]
	if len(args) == 3 {
		user, pass = args[1], args[2]
	}
	if c.srv.cfg.RequirePass == "" && len(args) == 2 {
		c.error(errNoPass)
		return
	}
	if !c.checkPassword(user, pass) {
		c.error(errWrongPass)
		return
	}
	c.ok()
}

func cmdHello(c *conn, args [][]byte) {
	proto := int64(c.w.Protocol())
	if len(args) >= 2 {
		var ok bool
		if proto, ok = parseInt(args[1]); !ok {
			c.error("ERR Protocol version is not an integer or out of range")
			return
		}
		if proto != 2 && proto != 3 {
			c.error("NOPROTO unsupported protocol version")
			return
		}
	}
	var name []byte
	authed := false
	for i := 2; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch {
		case opt == "AUTH" && i+2 < len(args):
			if !c.checkPassword(args[i+1], args[i+2]) {
				c.error(errWrongPass)
				return
			}
			authed = true
			i += 2
		case opt == "SETNAME" && i+1 < len(args):
			name = args[i+1]
			if !validName(name) {
				c.error("ERR Client names cannot contain spaces, newlines or special characters.")
				return
			}
			i++
		default:
			c.error("ERR Syntax error in HELLO option '" + string(args[i]) + "'")
			return
		}
	}
	if !c.authed && !authed {
		c.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if name != nil {
		c.name = string(name)
	}
	c.w.SetProtocol(int(proto))
	c.resp3.Store(proto == 3)
	c.w.MapHeader(7)
	c.w.BulkString("server")
	c.w.BulkString("redis")
	c.w.BulkString("version")
	c.w.BulkString(redisVersion)
	c.w.BulkString("proto")
	c.w.Integer(proto)
	c.w.BulkString("id")
	c.w.Integer(c.id)
	c.w.BulkString("mode")
	c.w.BulkString("standalone")
	c.w.BulkString("role")
	c.w.BulkString("master")
	c.w.BulkString("modules")
	c.writeModules()
}

// validName reports whether a client name has only printable non-space
// ASCII, as Redis requires.
func validName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdClientSetName(c *conn, args [][]byte) {
	if !validName(args[2]) {
		c.error("ERR Client names cannot contain spaces, newlines or special characters.")
		return
	}
	c.name = string(args[2])
	c.ok()
}

func cmdClientGetName(c *conn, _ [][]byte) {
	if c.name == "" {
		c.w.Null()
		return
	}
	c.w.BulkString(c.name)
}

func cmdClientSetInfo(c *conn, args [][]byte) {
	attr := strings.ToLower(string(args[2]))
	i := map[string]int{"lib-name": 0, "lib-ver": 1}[attr]
	if attr != "lib-name" && attr != "lib-ver" {
		c.error("ERR Unrecognized option '" + string(args[2]) + "'")
		return
	}
	if !validName(args[3]) {
		c.error("ERR " + attr + " cannot contain spaces, newlines or special characters.")
		return
	}
	c.lib[i] = string(args[3])
	c.ok()
}

// describe is the connection's CLIENT INFO line (a subset of Redis's
// fields).
func (c *conn) describe(now time.Time) string {
	return fmt.Sprintf("id=%d addr=%s laddr=%s name=%s age=%d db=0 resp=%d lib-name=%s lib-ver=%s",
		c.id, c.remote, c.local, c.name, int(now.Sub(c.created).Seconds()), c.w.Protocol(), c.lib[0], c.lib[1])
}
