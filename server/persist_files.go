package server

import (
	"fmt"
	"github.com/bloomery/bloom/internal/atomicfile"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Names of the data directory's files (see persist.go).
const (
	snapshotPrefix, snapshotSuffix = "snapshot.", ".bdb"
	logPrefix, logSuffix           = "appendonly.", ".aof"
	tmpSuffix                      = ".tmp"
	lockName                       = "LOCK"
)

func snapshotName(gen uint64) string {
	return snapshotPrefix + strconv.FormatUint(gen, 10) + snapshotSuffix
}

func logName(gen uint64) string { return logPrefix + strconv.FormatUint(gen, 10) + logSuffix }

// parseGen returns G of a name prefix+G+suffix, G a positive decimal
// without leading zeros.
func parseGen(name, prefix, suffix string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, suffix); !ok {
		return 0, false
	}
	g, err := strconv.ParseUint(s, 10, 64)
	if err != nil || g == 0 || strconv.FormatUint(g, 10) != s {
		return 0, false
	}
	return g, true
}

// generations are the snapshot and log generations found in a directory,
// in increasing order.
type generations struct{ snapshots, logs []uint64 }

// listGenerations reads dir's snapshot and log names, deleting leftover
// temporary files (a snapshot or truncation interrupted by a crash).
func listGenerations(dir string) (generations, error) {
	var g generations
	des, err := os.ReadDir(dir)
	if err != nil {
		return g, fmt.Errorf("server: read data directory: %w", err)
	}
	for _, de := range des {
		name := de.Name()
		if !de.Type().IsRegular() {
			continue
		}
		if strings.HasSuffix(name, tmpSuffix) || atomicfile.IsTemp(name) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return g, fmt.Errorf("server: remove leftover %s: %w", name, err)
			}
			continue
		}
		if gen, ok := parseGen(name, snapshotPrefix, snapshotSuffix); ok {
			g.snapshots = append(g.snapshots, gen)
		} else if gen, ok := parseGen(name, logPrefix, logSuffix); ok {
			g.logs = append(g.logs, gen)
		}
	}
	slices.Sort(g.snapshots)
	slices.Sort(g.logs)
	return g, nil
}

// plan chooses what startup loads: the newest snapshot (0: none) and the
// logs from its generation on, which must be consecutive and start at
// the snapshot's generation (or at 1 without a snapshot), since a missing
// log is lost data.
func (g generations) plan(dir string) (snap uint64, logs []uint64, err error) {
	if n := len(g.snapshots); n > 0 {
		snap = g.snapshots[n-1]
	}
	for _, l := range g.logs {
		if l >= snap {
			logs = append(logs, l)
		}
	}
	want := max(snap, 1)
	for _, l := range logs {
		if l != want {
			before := "appendonly." + strconv.FormatUint(want, 10) + ".aof"
			if snap == 0 && want == 1 && l > 1 {
				before = "a snapshot"
			}
			return 0, nil, fmt.Errorf("server: data directory %s: %s is there but %s (the changes before it) is missing; "+
				"starting would lose data: restore the directory from a backup", dir, logName(l), before)
		}
		want++
	}
	return snap, logs, nil
}

// removeBefore deletes the snapshots and logs older than gen (a newer
// snapshot holds their state).
func removeBefore(dir string, g generations, gen uint64) error {
	for _, s := range g.snapshots {
		if s < gen {
			if err := os.Remove(filepath.Join(dir, snapshotName(s))); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	for _, l := range g.logs {
		if l < gen {
			if err := os.Remove(filepath.Join(dir, logName(l))); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}

// openSized opens a file to read and returns its size.
func openSized(name string) (*os.File, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, fmt.Errorf("server: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("server: %w", err)
	}
	return f, st.Size(), nil
}
