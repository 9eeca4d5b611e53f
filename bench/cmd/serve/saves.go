package main

import (
	"strconv"
	"strings"
)

// A server's background persistence (bloomery's snapshots, redis-server's
// forked RDB saves and AOF rewrites) takes a core for a while on this
// two-core machine, whichever server's case is being measured then. Each
// run records which servers did such work while it ran, and the report
// gives the ratios over the rounds in which neither run of the pair had
// any beside the ratios over all rounds (docs/BENCHMARKS.md, "Rounds with
// a save in them").

// persistState is a server's count of background saves and rewrites
// finished, and whether one is under way.
type persistState struct {
	done    int64
	running bool
}

// persistStates reads every target's INFO persistence (a target that
// does not answer counts as idle).
func persistStates(targets []*target) []persistState {
	out := make([]persistState, len(targets))
	for i, t := range targets {
		f := infoFields(t, "persistence")
		num := func(name string) int64 { n, _ := strconv.ParseInt(f[name], 10, 64); return n }
		out[i] = persistState{
			done:    num("rdb_saves") + num("aof_rewrites"),
			running: num("rdb_bgsave_in_progress") != 0 || num("aof_rewrite_in_progress") != 0,
		}
	}
	return out
}

// savers names the targets with background persistence between before
// and after: running at either end, or finished some in between.
func savers(targets []*target, before, after []persistState) []string {
	var names []string
	for i, t := range targets {
		if before[i].running || after[i].running || after[i].done != before[i].done {
			names = append(names, t.name)
		}
	}
	return names
}

// fmtSavers lists, round by round, who saved during the runs of s:
// "·" for a round without.
func fmtSavers(s []sample) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = "·"
		if len(x.savers) > 0 {
			parts[i] = strings.Join(x.savers, "+")
		}
	}
	return strings.Join(parts, " ")
}
