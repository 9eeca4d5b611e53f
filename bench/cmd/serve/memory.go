package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// measureMemory fills one filter of o.memN items in a fresh server and
// compares the process's resident set with the filter's bytes.
func measureMemory(o options, dir string) error {
	ctx := context.Background()
	b, err := startBloomery(o.bin, dir, "everysec", o.serveArgs)
	if err != nil {
		return err
	}
	defer b.stop()
	idle, err := rss(b.cmd.Process.Pid)
	if err != nil {
		return err
	}
	// RESP2: BF.INFO's reply is then an array (RESP3 makes it a map).
	cl := redis.NewClient(&redis.Options{Addr: b.addr, Protocol: 2})
	defer cl.Close()
	n := o.memN
	if err := cl.Do(ctx, "BF.RESERVE", "mem", 0.01, n).Err(); err != nil {
		return err
	}
	for i := 0; i < n; i += 1000 {
		args := []any{"BF.MADD", "mem"}
		for j := i; j < min(i+1000, n); j++ {
			args = append(args, "item:"+strconv.Itoa(j))
		}
		if err := cl.Do(ctx, args...).Err(); err != nil {
			return err
		}
	}
	size, err := cl.Do(ctx, "BF.INFO", "mem", "SIZE").Slice()
	if err != nil {
		return err
	}
	bytes := size[0].(int64)
	full, err := rss(b.cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("\n## memory: one filter of %d items at p = 0.01\n\n", n)
	fmt.Printf("| idle RSS | filled RSS | filter bytes (BF.INFO Size) | (RSS − idle) / bytes | RSS − 1.2 × bytes |\n|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| %.1f MB | %.1f MB | %.1f MB | %.3f | %.1f MB |\n", float64(idle)/1e6, float64(full)/1e6, float64(bytes)/1e6,
		float64(full-idle)/float64(bytes), (float64(full)-1.2*float64(bytes))/1e6)
	return nil
}

// rss is a process's resident set in bytes (Linux /proc).
func rss(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
