package redisbench

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisStats is what a redis-server reports about its own work.
type RedisStats struct {
	// Commands holds calls and time spent executing, per command (INFO
	// commandstats, since the last CONFIG RESETSTAT), named as Redis names
	// them ("bitfield", "evalsha", "config|resetstat").
	Commands map[string]CommandStats
	// CPU is the server process's user and system time since it started
	// (INFO cpu): command execution plus reading, parsing and replying.
	CPU time.Duration
}

// CommandStats is one command's line of INFO commandstats.
type CommandStats struct {
	Calls int64
	Usec  int64 // microseconds spent executing it, in all
}

// ResetRedisStats zeroes the server's command statistics (CONFIG
// RESETSTAT); the CPU time is not reset.
func ResetRedisStats(ctx context.Context, c redis.UniversalClient) error {
	return c.ConfigResetStat(ctx).Err()
}

// ReadRedisStats reads INFO commandstats and INFO cpu.
func ReadRedisStats(ctx context.Context, c redis.UniversalClient) (RedisStats, error) {
	var info string
	for _, section := range []string{"commandstats", "cpu"} { // one per call: Redis 6 takes one
		text, err := c.Info(ctx, section).Result()
		if err != nil {
			return RedisStats{}, err
		}
		info += text
	}
	s := RedisStats{Commands: map[string]CommandStats{}}
	var cpu float64
	for name, value := range InfoFields(info) {
		switch {
		case name == "used_cpu_user" || name == "used_cpu_sys":
			x, _ := strconv.ParseFloat(value, 64)
			cpu += x
		case strings.HasPrefix(name, "cmdstat_"):
			var cs CommandStats
			for _, kv := range strings.Split(value, ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "calls":
					cs.Calls, _ = strconv.ParseInt(v, 10, 64)
				case "usec":
					cs.Usec, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			s.Commands[strings.TrimPrefix(name, "cmdstat_")] = cs
		}
	}
	s.CPU = time.Duration(cpu * float64(time.Second))
	return s, nil
}

// harnessCommands are what cmd/redis and the clients' connection set-up
// send besides the filters' own work.
var harnessCommands = []string{"config", "info", "flushall", "ping", "hello", "client", "select", "dump", "restore", "keys", "command"}

// Work returns the commands that did the filters' work: all but those of
// the harness (statistics, flushes, snapshots, connection set-up), and
// without the SETBIT and GETBIT calls that go-zero's Lua scripts make
// when EVALSHA or EVAL ran, since the script's own time includes them.
func (s RedisStats) Work() map[string]CommandStats {
	scripts := s.Commands["evalsha"].Calls+s.Commands["eval"].Calls > 0
	out := map[string]CommandStats{}
	for name, cs := range s.Commands {
		family, _, _ := strings.Cut(name, "|")
		if slices.Contains(harnessCommands, family) || scripts && (name == "setbit" || name == "getbit") {
			continue
		}
		out[name] = cs
	}
	return out
}
