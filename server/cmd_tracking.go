package server

import (
	"strings"
)

// CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO: client-side
// caching's commands (tracking.go), with Redis 7's options, checks and
// error texts.

func trackingCommands() []*command {
	return []*command{
		{name: "tracking", arity: -3, flags: flagLoading, run: cmdClientTracking},
		{name: "caching", arity: 3, flags: flagLoading, run: cmdClientCaching},
		{name: "getredir", arity: 2, flags: flagLoading, run: cmdClientGetRedir},
		{name: "trackinginfo", arity: 2, flags: flagLoading, run: cmdClientTrackingInfo},
	}
}

// cmdClientTracking answers CLIENT TRACKING ON|OFF [REDIRECT id]
// [PREFIX p]… [BCAST] [OPTIN] [OPTOUT] [NOLOOP].
func cmdClientTracking(c *conn, args [][]byte) {
	var st trackState
	var redir int64
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "redirect" && more:
			j++
			if redir != 0 {
				c.error("ERR A client can only redirect to a single other client")
				return
			}
			n, ok := parseInt(args[j])
			if !ok {
				c.error("ERR value is not an integer or out of range")
				return
			}
			if redir = n; c.srv.connByID(n) == nil {
				c.error("ERR The client ID you want redirect to does not exist")
				return
			}
		case opt == "bcast":
			st.bcast = true
		case opt == "optin":
			st.optin = true
		case opt == "optout":
			st.optout = true
		case opt == "noloop":
			st.noloop = true
		case opt == "prefix" && more:
			j++
			st.prefixes = append(st.prefixes, string(args[j]))
		default:
			c.error("ERR syntax error")
			return
		}
	}
	switch strings.ToLower(string(args[2])) {
	case "on":
		if msg := c.checkTracking(st, redir); msg != "" {
			c.error(msg)
			return
		}
		st.on = true
		if redir != 0 {
			st.redirect = c.srv.connByID(redir)
		}
		c.srv.track.enable(c, st)
	case "off":
		c.srv.track.disable(c)
	default:
		c.error("ERR syntax error")
		return
	}
	c.ok()
}

// checkTracking returns the error for turning tracking on with st and a
// redirect to client redir (0: none), or "" when it may be.
func (c *conn) checkTracking(st trackState, redir int64) string {
	cur := c.trk
	switch {
	case !st.bcast && len(st.prefixes) > 0:
		return "ERR PREFIX option requires BCAST mode to be enabled"
	case cur.on && cur.bcast != st.bcast:
		return "ERR You can't switch BCAST mode on/off before disabling tracking for this client, " +
			"and then re-enabling it with a different mode."
	case st.bcast && (st.optin || st.optout):
		return "ERR OPTIN and OPTOUT are not compatible with BCAST"
	case st.optin && st.optout:
		return "ERR You can't specify both OPTIN mode and OPTOUT mode"
	case (st.optin && cur.optout) || (st.optout && cur.optin):
		return "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, " +
			"and then re-enabling it with a different mode."
	}
	if st.bcast {
		if msg := prefixCollision(cur.prefixes, st.prefixes); msg != "" {
			return msg
		}
	}
	if redir != 0 {
		target := c.srv.connByID(redir)
		if target == nil {
			return "ERR The client ID you want redirect to does not exist"
		}
		if target != c && !target.resp3.Load() {
			// Redis would send to a RESP2 target subscribed to
			// __redis__:invalidate; this server has no SUBSCRIBE.
			return "ERR REDIRECT to a RESP2 connection is not supported by this server: redirect to a connection in RESP3 (HELLO 3)"
		}
	}
	return ""
}

// prefixCollision returns Redis's error when a new BCAST prefix is a
// prefix of (or has as prefix) one the client has, or another new one.
func prefixCollision(have, add []string) string {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range add {
		for _, h := range have {
			if overlap(p, h) {
				return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + h + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range add[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// cmdClientCaching answers CLIENT CACHING YES|NO: whether the next
// command's (or transaction's) reads are tracked, in OPTIN or OPTOUT mode.
func cmdClientCaching(c *conn, args [][]byte) {
	if !c.trk.on {
		c.error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch strings.ToLower(string(args[2])) {
	case "yes":
		if !c.trk.optin {
			c.error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case "no":
		if !c.trk.optout {
			c.error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.error("ERR syntax error")
		return
	}
	c.trk.caching = true
	c.ok()
}

// redirectID is c's CLIENT GETREDIR: -1 without tracking, 0 without a
// redirect, else the target's id.
func (c *conn) redirectID() int64 {
	switch {
	case !c.trk.on:
		return -1
	case c.trk.redirect == nil:
		return 0
	}
	return c.trk.redirect.id
}

func cmdClientGetRedir(c *conn, _ [][]byte) { c.w.Integer(c.redirectID()) }

// cmdClientTrackingInfo answers CLIENT TRACKINGINFO: flags, redirect and
// prefixes, in Redis's order.
func cmdClientTrackingInfo(c *conn, _ [][]byte) {
	c.srv.track.mu.Lock()
	st := c.trk
	c.srv.track.mu.Unlock()
	var flags []string
	if !st.on {
		flags = append(flags, "off")
	} else {
		flags = append(flags, "on")
		for _, f := range []struct {
			set  bool
			name string
		}{{st.bcast, "bcast"}, {st.optin, "optin"}, {st.optout, "optout"},
			{st.optin && st.caching, "caching-yes"}, {st.optout && st.caching, "caching-no"},
			{st.noloop, "noloop"}, {st.broken, "broken_redirect"}} {
			if f.set {
				flags = append(flags, f.name)
			}
		}
	}
	c.w.MapHeader(3)
	c.w.BulkString("flags")
	c.w.SetHeader(len(flags))
	for _, f := range flags {
		c.w.BulkString(f)
	}
	c.w.BulkString("redirect")
	c.w.Integer(c.redirectID())
	c.w.BulkString("prefixes")
	c.w.ArrayHeader(len(st.prefixes))
	for _, p := range st.prefixes {
		c.w.BulkString(p)
	}
}
