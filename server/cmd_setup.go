package server

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
)

// What clients send while they set a connection up, beyond HELLO, AUTH
// and SELECT: ROLE, MODULE LIST, CLUSTER (rueidis and go-redis ask for
// the slots, then fall back to a single server), READONLY/READWRITE,
// CLIENT NO-EVICT/NO-TOUCH, and INFO's replication, modules and cluster
// sections. docs/SERVER.md, "What clients send on connect", lists them.

// The Bloom filter module as the server reports it (HELLO, MODULE LIST,
// INFO modules): RedisBloom's name "bf", and the version number of
// RedisBloom 8.8.0 (major·10000 + minor·100 + patch), the release of the
// 8.x line whose replies the server follows. Clients that check for the
// module (redis-py's tests: a version of at least 2.x) find it.
const (
	bloomModuleName    = "bf"
	bloomModuleVersion = 80800
)

// errClusterDisabled is Redis's reply to cluster commands when it is not
// a cluster node.
const errClusterDisabled = "ERR This instance has cluster support disabled"

func setupCommands() []*command {
	disabled := func(c *conn, _ [][]byte) { c.error(errClusterDisabled) }
	clusterSub := func(name string, arity int) *command {
		return &command{name: name, arity: arity, flags: flagLoading, run: disabled}
	}
	return []*command{
		{name: "role", arity: 1, flags: flagFast | flagLoading, run: cmdRole},
		{name: "readonly", arity: 1, flags: flagFast | flagLoading, run: disabled},
		{name: "readwrite", arity: 1, flags: flagFast | flagLoading, run: disabled},
		{name: "module", arity: -2, subs: subcommands("MODULE",
			&command{name: "list", arity: 2, flags: flagAdmin | flagLoading, run: cmdModuleList},
			&command{name: "load", arity: -3, flags: flagAdmin, run: cmdModuleLoad},
			&command{name: "loadex", arity: -3, flags: flagAdmin, run: cmdModuleLoad},
			&command{name: "unload", arity: 3, flags: flagAdmin, run: cmdModuleLoad},
		)},
		{name: "cluster", arity: -2, subs: subcommands("CLUSTER",
			clusterSub("slots", 2), clusterSub("shards", 2), clusterSub("nodes", 2),
			clusterSub("info", 2), clusterSub("myid", 2), clusterSub("links", 2),
			clusterSub("keyslot", 3), clusterSub("countkeysinslot", 3), clusterSub("getkeysinslot", 4),
			clusterSub("replicas", 3), clusterSub("slaves", 3), clusterSub("help", 2),
		)},
	}
}

// clientSetupCommands are CLIENT NO-EVICT and NO-TOUCH: accepted, with no
// effect (nothing is evicted, and keys have no access time).
func clientSetupCommands() []*command {
	onOff := func(c *conn, args [][]byte) {
		switch strings.ToLower(string(args[2])) {
		case "on", "off":
			c.ok()
		default:
			c.error("ERR syntax error")
		}
	}
	return []*command{
		{name: "no-evict", arity: 3, flags: flagLoading, run: onOff},
		{name: "no-touch", arity: 3, flags: flagLoading, run: onOff},
	}
}

// cmdRole answers ROLE as a master without replicas.
func cmdRole(c *conn, _ [][]byte) {
	c.w.ArrayHeader(3)
	c.w.BulkString("master")
	c.w.Integer(0)
	c.w.ArrayHeader(0)
}

// writeModules writes the module list of HELLO and MODULE LIST: one
// module, with Redis's fields name, ver, path and args. There is no
// module file: the path is empty.
func (c *conn) writeModules() {
	c.w.ArrayHeader(1)
	c.w.MapHeader(4)
	c.w.BulkString("name")
	c.w.BulkString(bloomModuleName)
	c.w.BulkString("ver")
	c.w.Integer(bloomModuleVersion)
	c.w.BulkString("path")
	c.w.BulkString("")
	c.w.BulkString("args")
	c.w.ArrayHeader(0)
}

func cmdModuleList(c *conn, _ [][]byte) { c.writeModules() }

func cmdModuleLoad(c *conn, args [][]byte) {
	c.error("ERR MODULE " + strings.ToUpper(string(args[1])) + " is not supported: the Bloom filter commands are built in")
}

// replicationID is INFO's master_replid: random, for the process.
var replicationID = func() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// setupInfo returns the fields of INFO's replication, modules and cluster
// sections, as Redis's for a master without replicas that is not a
// cluster node, with the Bloom filter module loaded.
func setupInfo(sec string) []infoField {
	switch sec {
	case "replication":
		return []infoField{
			{"role", "master"}, {"connected_slaves", "0"}, {"master_failover_state", "no-failover"},
			{"master_replid", replicationID}, {"master_replid2", strings.Repeat("0", 40)},
			{"master_repl_offset", "0"}, {"second_repl_offset", "-1"}, {"repl_backlog_active", "0"},
			{"repl_backlog_size", "1048576"}, {"repl_backlog_first_byte_offset", "0"}, {"repl_backlog_histlen", "0"},
		}
	case "modules":
		return []infoField{{"module", "name=" + bloomModuleName + ",ver=" + strconv.Itoa(bloomModuleVersion) +
			",api=1,filters=0,usedby=[],using=[],options=[handle-io-errors]"}}
	case "cluster":
		return []infoField{{"cluster_enabled", "0"}}
	}
	return nil
}
