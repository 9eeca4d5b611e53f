package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/bloomery/bloom/bench/redisbench"
	"github.com/redis/go-redis/v9"
)

// target is one server under test.
type target struct {
	name   string // "bloomery", "redisbloom", "redisbloom+aof" or "redis"
	addr   string
	pid    int
	module bool // answers BF.* (bloomery, or redis-server with RedisBloom)
	// backingPid is the redis-server behind a bloomery with -backend
	// redis (0: none).
	backingPid int
	stop       func()
}

// redisDefaultSave is redis-server 7.0's default RDB schedule.
const redisDefaultSave = "3600 1 300 100 60 10000"

// startPeers starts the redis-servers to compare with: with the module,
// one with Redis's default persistence and one with appendfsync
// everysec; without it, plain redis-server.
func startPeers(module string) ([]*target, error) {
	type peer struct {
		name string
		args []string
	}
	peers := []peer{{"redis", nil}}
	if module != "" {
		load := []string{"--loadmodule", module}
		peers = []peer{
			{"redisbloom", append([]string{"--save", redisDefaultSave}, load...)},
			{"redisbloom+aof", append([]string{"--appendonly", "yes", "--appendfsync", "everysec"}, load...)},
		}
	}
	var out []*target
	for _, p := range peers {
		rs, err := redisbench.StartRedis("redis-server", p.args...)
		if err != nil {
			for _, t := range out {
				t.stop()
			}
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		out = append(out, &target{name: p.name, addr: rs.Addr(), pid: rs.Pid(), module: module != "", stop: rs.Stop})
	}
	return out, nil
}

// bloomery is a bloomery serve subprocess.
type bloomery struct {
	cmd  *exec.Cmd
	addr string
}

// startBloomery runs bin serve on dir and returns once it answers PING.
func startBloomery(bin, dir, fsync, extra string) (*bloomery, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	args := append([]string{"serve", "--addr", addr, "--dir", dir, "--appendfsync", fsync, "--log-level", "warn"},
		strings.Fields(extra)...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	redisbench.KillWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &bloomery{cmd: cmd, addr: addr}
	if _, err := b.waitReady(time.Minute); err != nil {
		b.kill()
		return nil, err
	}
	return b, nil
}

// waitReady waits until the server answers PING and returns how long
// that took.
func (b *bloomery) waitReady(limit time.Duration) (time.Duration, error) {
	start := time.Now()
	cl := redis.NewClient(&redis.Options{Addr: b.addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer cl.Close()
	for time.Since(start) < limit {
		if cl.Ping(context.Background()).Err() == nil {
			return time.Since(start), nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("bloomery serve on %s did not answer within %v", b.addr, limit)
}

func (b *bloomery) target() *target {
	return &target{name: "bloomery", addr: b.addr, pid: b.cmd.Process.Pid, module: true, stop: b.stop}
}

// stop shuts the server down gracefully (it writes its snapshot).
func (b *bloomery) stop() {
	if b.cmd.ProcessState != nil {
		return
	}
	b.cmd.Process.Signal(os.Interrupt)
	b.cmd.Wait()
}

// kill ends the server as a crash would (SIGKILL).
func (b *bloomery) kill() {
	if b.cmd.ProcessState != nil {
		return
	}
	b.cmd.Process.Kill()
	b.cmd.Wait()
}
