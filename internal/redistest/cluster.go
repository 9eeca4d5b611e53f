package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	clusterMasters      = 3
	clusterSlots        = 16384
	clusterReadyTimeout = 30 * time.Second // from create until every node is ok
	clusterCreateLimit  = 60 * time.Second // for redis-cli --cluster create
)

// Cluster is a Redis Cluster of three masters and no replicas, each master
// a Server of its own, started by StartCluster.
type Cluster struct {
	nodes []*Server
}

// StartCluster runs three cluster-enabled redis-servers on free loopback
// ports (each with its own directory and its own free cluster bus port),
// joins them with `redis-cli --cluster create`, which gives each master
// about a third of the 16384 slots, and returns once every node reports
// cluster_state:ok and knows all slots to be served. The nodes stop when
// the test ends.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	cli := binary(tb, "redis-cli")
	args := []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "5000",
	}
	// The bus port is set explicitly rather than left at port+10000, so
	// that it too is picked free, and a bind failure on it is retried.
	busPort := func(p int) []string { return []string{"--cluster-port", strconv.Itoa(p)} }
	c := &Cluster{}
	for range clusterMasters {
		c.nodes = append(c.nodes, start(tb, tb.TempDir(), args, busPort))
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterCreateLimit)
	defer cancel()
	create := append([]string{"--cluster", "create"}, c.Addrs()...)
	create = append(create, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, create...).CombinedOutput(); err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, tail(string(out), 30))
	}
	c.WaitOK(tb)
	return c
}

// WaitOK returns once every node reports cluster_state:ok and knows all
// 16384 slots to be served, or fails the test after 30 s. Call it after
// restarting a node: a restarted master reports ok only after a rejoin
// delay of about the node timeout (5 s).
func (c *Cluster) WaitOK(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(clusterReadyTimeout)
	for {
		addr, info := c.notReady()
		if addr == "" {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: cluster node %s not ready after %v; CLUSTER INFO:\n%s\nlog:\n%s",
				addr, clusterReadyTimeout, info, c.nodeLog(addr))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// notReady returns the address of a node that does not yet see the whole
// cluster as ok, with its CLUSTER INFO (or the error asking for it), or
// "" if every node does.
func (c *Cluster) notReady() (addr, info string) {
	want := []string{
		"cluster_state:ok",
		"cluster_slots_assigned:" + strconv.Itoa(clusterSlots),
		"cluster_slots_ok:" + strconv.Itoa(clusterSlots),
		"cluster_known_nodes:" + strconv.Itoa(clusterMasters),
		"cluster_size:" + strconv.Itoa(clusterMasters),
	}
	for _, a := range c.Addrs() {
		info, err := do(a, "CLUSTER", "INFO")
		if err != nil {
			return a, err.Error()
		}
		lines := strings.Split(strings.ReplaceAll(info, "\r", ""), "\n")
		for _, w := range want {
			if !slices.Contains(lines, w) {
				return a, info
			}
		}
	}
	return "", ""
}

// nodeLog returns the end of the log of the node at addr.
func (c *Cluster) nodeLog(addr string) string {
	for _, n := range c.nodes {
		if n.Addr() == addr {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.proc == nil {
				return "(stopped)"
			}
			return tail(n.proc.output(), 20)
		}
	}
	return fmt.Sprintf("(no node %s)", addr)
}

// Addrs returns the "127.0.0.1:port" of each master, for a cluster client's
// seed list.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes returns the masters' servers, for tests that stop, kill or restart
// one node. A restarted node rejoins with the slots recorded in its
// nodes.conf; WaitOK waits until it serves them again.
func (c *Cluster) Nodes() []*Server {
	return append([]*Server(nil), c.nodes...)
}
