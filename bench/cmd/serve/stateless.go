package main

import (
	"fmt"
	"path/filepath"

	"github.com/bloomery/bloom/bench/redisbench"
)

// The stateless mode (-backend redis): each bloomery under test runs
// with --backend redis://… in front of a plain redis-server of its own
// (no module, Redis's default persistence, as the redisbloom peer), which
// the benchmark starts and stops with it; the report adds that server's
// CPU time per million requests, since a request costs both processes.
//
// -baseline BIN runs a second bloomery binary (bloomery-base) beside the
// first in the same interleaved rounds, so a change is measured against
// what it replaces on the same machine at the same time.

// bloomeries starts the bloomery servers of a run: o.bin as "bloomery"
// and, with -baseline, o.baseline as "bloomery-base", each in a data
// directory under tmp (<name>-data) and, with -backend redis, with a backing
// redis-server of its own.
func bloomeries(o options, tmp string) ([]*target, error) {
	bins := []struct{ name, bin string }{{"bloomery", o.bin}}
	if o.baseline != "" {
		bins = append(bins, struct{ name, bin string }{"bloomery-base", o.baseline})
	}
	var out []*target
	for _, b := range bins {
		// Not tmp/<name>: the bloomery binary BuildBloomery made is tmp/bloomery.
		t, err := startTarget(o, b.name, b.bin, filepath.Join(tmp, b.name+"-data"))
		if err != nil {
			for _, t := range out {
				t.stop()
			}
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// startTarget starts bin as the target called name.
func startTarget(o options, name, bin, dir string) (*target, error) {
	if o.backend == "memory" {
		bl, err := startBloomery(bin, dir, o.fsync, o.serveArgs)
		if err != nil {
			return nil, err
		}
		t := bl.target()
		t.name = name
		return t, nil
	}
	rs, err := redisbench.StartRedis("redis-server", "--save", redisDefaultSave)
	if err != nil {
		return nil, fmt.Errorf("backing redis-server: %w", err)
	}
	bl, err := startBloomery(bin, dir, o.fsync, "--backend redis://"+rs.Addr()+" "+o.serveArgs)
	if err != nil {
		rs.Stop()
		return nil, err
	}
	t := bl.target()
	t.name, t.backingPid = name, rs.Pid()
	t.stop = func() { bl.stop(); rs.Stop() }
	return t, nil
}
