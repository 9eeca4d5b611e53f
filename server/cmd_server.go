package server

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Server commands: INFO, SAVE, BGSAVE, LASTSAVE, SHUTDOWN, CONFIG.

// redisVersion is the Redis version the server reports (HELLO, INFO):
// the protocol and command semantics it follows.
const redisVersion = "7.0.0"

// Version is Bloomery's own version, in INFO as bloomery_version.
const Version = "0.5.0"

func serverCommands() []*command {
	return []*command{
		{name: "info", arity: -1, flags: flagLoading, run: cmdInfoServer, slow: always},
		{name: "save", arity: 1, flags: flagAdmin, run: cmdSave, slow: always},
		{name: "bgsave", arity: -1, flags: flagAdmin, run: cmdBGSave, slow: always},
		{name: "lastsave", arity: 1, flags: flagFast | flagLoading, run: cmdLastSave},
		{name: "shutdown", arity: -1, flags: flagAdmin | flagLoading, run: cmdShutdown, slow: always},
		{name: "config", arity: -2, subs: subcommands("CONFIG",
			&command{name: "get", arity: -3, flags: flagAdmin | flagLoading, run: cmdConfigGet, slow: always},
			&command{name: "set", arity: -4, flags: flagAdmin, run: func(c *conn, _ [][]byte) {
				c.error("ERR CONFIG SET is not supported: restart bloomery serve with the new flags")
			}},
			&command{name: "resetstat", arity: 2, flags: flagAdmin, run: func(c *conn, _ [][]byte) { c.srv.stats.reset(c.srv.metrics); c.ok() }},
		)},
		{name: "memory", arity: -2, subs: subcommands("MEMORY",
			&command{name: "purge", arity: 2, flags: flagAdmin, run: cmdMemoryPurge, slow: always},
			&command{name: "usage", arity: -3, flags: flagReadonly, keys: [3]int{2, 2, 1}, run: cmdMemoryUsage},
		)},
	}
}

// cmdMemoryPurge collects garbage and returns free memory to the OS, so
// that INFO's used_memory counts what is live.
func cmdMemoryPurge(c *conn, _ [][]byte) {
	debug.FreeOSMemory() // a collection, then the release
	c.ok()
}

// keyOverhead estimates the bytes a key costs beyond its name and its
// filter's bit arrays: the keyspace entry and the filter's structures.
const keyOverhead = 160

// cmdMemoryUsage answers MEMORY USAGE key [SAMPLES n]: the bytes of the
// key's filter, its name and keyOverhead, or nil for a missing key.
func cmdMemoryUsage(c *conn, args [][]byte) {
	if len(args) != 3 && (len(args) != 5 || !strings.EqualFold(string(args[3]), "SAMPLES")) {
		c.error("ERR syntax error")
		return
	}
	in, err := c.srv.bloom.Info(c.ctx, string(args[2]))
	switch {
	case err == errNotFound:
		c.w.Null()
	case err != nil:
		c.fail(err)
	default:
		c.w.Integer(int64(in.Bytes) + int64(len(args[2])) + keyOverhead)
	}
}

// result writes +OK or err's reply.
func (c *conn) result(err error) {
	if err != nil {
		c.fail(err)
		return
	}
	c.ok()
}

// SAVE, BGSAVE and LASTSAVE are the server's persistence's (persist.go);
// without one (no data directory, or the Redis backend, whose data is
// Redis's business) SAVE and BGSAVE answer errNotSupported.

func cmdSave(c *conn, _ [][]byte) {
	if c.srv.persist == nil {
		c.fail(errNotSupported)
		return
	}
	c.result(c.srv.persist.save())
}

// cmdLastSave answers the time of the last save, or, before any (or
// without persistence), the server's start, as Redis does.
func cmdLastSave(c *conn, _ [][]byte) {
	t := c.srv.started
	if c.srv.persist != nil {
		t = c.srv.persist.lastSave()
	}
	c.w.Integer(t.Unix())
}

func cmdBGSave(c *conn, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !strings.EqualFold(string(args[1]), "SCHEDULE")) {
		c.error("ERR syntax error")
		return
	}
	if c.srv.persist == nil {
		c.fail(errNotSupported)
		return
	}
	if err := c.srv.persist.bgsave(); err != nil {
		c.fail(err)
		return
	}
	c.w.SimpleString("Background saving started")
}

func cmdShutdown(c *conn, args [][]byte) {
	for _, a := range args[1:] {
		switch strings.ToUpper(string(a)) {
		case "NOSAVE", "SAVE", "NOW", "FORCE":
		default:
			c.error("ERR syntax error")
			return
		}
	}
	c.srv.log.Info("SHUTDOWN requested", "client", c.id, "addr", c.remote)
	go c.srv.Shutdown(c.srv.ctx) // closes this connection too
	c.quit = true
}

// configValues are CONFIG GET's parameters: Redis's names, this
// server's values.
func (s *Server) configValues() [][2]string {
	host, port := splitHostPort(s.Addr())
	return [][2]string{
		{"bind", host},
		{"port", port},
		{"dir", s.cfg.Dir},
		{"appendonly", yesNo(s.cfg.Backend == "memory" && s.cfg.Dir != "")},
		{"appendfsync", s.cfg.AppendFsync},
		{"save", ""},
		{"databases", "1"},
		{"maxmemory", strconv.FormatUint(shown(s.cfg.MaxMemory), 10)},
		{"maxmemory-policy", "noeviction"},
		{"maxclients", strconv.Itoa(s.cfg.MaxClients)},
		{"timeout", strconv.Itoa(int(s.cfg.IdleTimeout / time.Second))},
		{"requirepass", s.cfg.RequirePass},
		{"proto-max-bulk-len", strconv.FormatInt(s.cfg.Limits.MaxBulk, 10)},
		{"client-query-buffer-limit", strconv.FormatInt(s.cfg.Limits.MaxQueryBuffer, 10)},
		{"bf-error-rate", "0.01"},
		{"bf-initial-size", "100"},
		{"bf-expansion-factor", "2"},
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func cmdConfigGet(c *conn, args [][]byte) {
	var out [][2]string
	for _, kv := range c.srv.configValues() {
		for _, p := range args[2:] {
			if globMatch(strings.ToLower(string(p)), kv[0]) {
				out = append(out, kv)
				break
			}
		}
	}
	if c.w.Protocol() == 3 {
		c.w.MapHeader(len(out))
	} else {
		c.w.ArrayHeader(2 * len(out))
	}
	for _, kv := range out {
		c.w.BulkString(kv[0])
		c.w.BulkString(kv[1])
	}
}

// infoSections are INFO's sections in order; "default" and "all" give
// every one.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "modules", "cluster", "keyspace"}

func cmdInfoServer(c *conn, args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["default"] || want["everything"]
	var b strings.Builder
	for _, sec := range infoSections {
		if !all && !want[sec] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + strings.ToUpper(sec[:1]) + sec[1:] + "\r\n")
		for _, f := range c.srv.infoSection(sec) {
			b.WriteString(f.name + ":" + f.value + "\r\n")
		}
	}
	c.w.Verbatim("txt", []byte(b.String()))
}

// infoSection returns the fields of one INFO section.
func (s *Server) infoSection(sec string) []infoField {
	st := s.backend.Stats()
	now := time.Now()
	f := func(name string, v any) infoField { return infoField{name, fmt.Sprint(v)} }
	switch sec {
	case "server":
		_, port := splitHostPort(s.Addr())
		up := now.Sub(s.started)
		exe, _ := os.Executable()
		return []infoField{
			f("redis_version", redisVersion), f("bloomery_version", Version), f("redis_mode", "standalone"),
			f("os", runtime.GOOS), f("arch_bits", strconv.IntSize), f("go_version", runtime.Version()),
			f("process_id", os.Getpid()), f("tcp_port", port), f("backend", s.backendName()),
			f("uptime_in_seconds", int64(up.Seconds())), f("uptime_in_days", int64(up.Hours()/24)),
			f("executable", exe),
		}
	case "clients":
		return []infoField{f("connected_clients", s.stats.clients.Load()), f("maxclients", s.cfg.MaxClients), f("blocked_clients", 0)}
	case "memory":
		return s.memoryInfo(st)
	case "persistence":
		return append(append([]infoField{f("loading", 0)}, s.persistInfo()...), st.Fields...)
	case "stats":
		wakeups, polled, naps := s.metrics.busyPolls()
		return []infoField{
			f("total_connections_received", s.stats.connections.Load()),
			f("total_commands_processed", s.metrics.processed()),
			f("total_error_replies", s.stats.errorReplies.Load()),
			f("rejected_connections", s.stats.rejected.Load()),
			f("expired_keys", s.stats.expired.Load()),
			f("acl_access_denied_auth", s.stats.authFailures.Load()),
			f("busy_poll_wakeups", wakeups), f("busy_poll_us", polled), f("busy_poll_naps", naps),
		}
	case "replication", "modules", "cluster":
		return setupInfo(sec)
	case "keyspace":
		if st.Keys == 0 {
			return nil
		}
		return []infoField{f("db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", st.Keys, st.Expires))}
	}
	return nil
}

// persistInfo is the persistence's part of INFO's persistence section.
func (s *Server) persistInfo() []infoField {
	if s.persist == nil {
		return nil
	}
	return s.persist.info()
}

// memoryInfo is INFO's memory section: the Go heap in use (used_memory,
// filters included) and the resident set; the filters' bytes as
// reserved, which the limits count; and the limits in force, with how
// maxmemory was chosen and the machine's figures it was chosen from.
func (s *Server) memoryInfo(st backendStats) []infoField {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var out []infoField
	add := func(name string, n uint64) {
		out = append(out, infoField{name, strconv.FormatUint(n, 10)}, infoField{name + "_human", humanBytes(n)})
	}
	add("used_memory", ms.HeapAlloc)
	if rss, err := residentBytes(statmFile); err == nil {
		add("used_memory_rss", rss)
	}
	add("filter_bytes", st.FilterBytes)
	add("maxmemory", shown(s.cfg.MaxMemory))
	out = append(out, infoField{"maxmemory_from", s.memFrom})
	add("maxmemory_per_filter", shown(s.cfg.MaxFilterBytes))
	out = append(out, infoField{"maxmemory_policy", "noeviction"})
	if s.machine.total != 0 {
		add("total_system_memory", s.machine.total)
	}
	if s.machine.cgroup != 0 {
		add("cgroup_memory_limit", s.machine.cgroup)
	}
	return out
}

// humanLimit is a limit for people: "unlimited" or humanBytes.
func humanLimit(n uint64) string {
	if n == Unlimited {
		return "unlimited"
	}
	return humanBytes(n)
}

// humanBytes formats n as Redis's used_memory_human does ("1.50M").
func humanBytes(n uint64) string {
	const units = "BKMGTPE"
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%dB", n)
	}
	return fmt.Sprintf("%.2f%c", v, units[i])
}
