package server

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
)

// The default memory limit (Config.MaxMemory, --maxmemory) is a share of
// the memory this process may use: the machine's physical memory
// (MemTotal of /proc/meminfo) or its control group's limit (cgroup v2
// memory.max, v1 memory.limit_in_bytes, the smallest on the path from
// the process's group to the root), whichever is smaller. See
// docs/SERVER.md for the share chosen and why.

// DefaultMaxMemoryPercent is the share of the machine's (or the control
// group's) memory the filters may reserve by default.
const DefaultMaxMemoryPercent = 50

// memorySources are the files the machine's memory is read from; tests
// point them at files of their own.
type memorySources struct {
	meminfo   string // /proc/meminfo
	mountinfo string // /proc/self/mountinfo: where the cgroup file systems are
	cgroup    string // /proc/self/cgroup: this process's groups
}

var systemMemory = memorySources{meminfo: "/proc/meminfo", mountinfo: "/proc/self/mountinfo", cgroup: "/proc/self/cgroup"}

// machineMemory is what the process may use, and where that figure came
// from.
type machineMemory struct {
	total  uint64 // physical memory (0: unknown)
	cgroup uint64 // the control group's limit (0: none or unknown)
}

// limit is the smaller of the two known figures (0: neither is known)
// and its name.
func (mm machineMemory) limit() (uint64, string) {
	switch {
	case mm.cgroup != 0 && (mm.total == 0 || mm.cgroup < mm.total):
		return mm.cgroup, "cgroup memory limit"
	case mm.total != 0:
		return mm.total, "physical memory"
	}
	return 0, ""
}

// defaultMaxMemory is the default memory limit, DefaultMaxMemoryPercent
// of the limit of mm, and how it was chosen; Unlimited when neither
// figure is known.
func defaultMaxMemory(mm machineMemory) (uint64, string) {
	limit, what := mm.limit()
	if limit == 0 {
		return Unlimited, "unlimited (the machine's memory is unknown: set --maxmemory)"
	}
	return limit/100*DefaultMaxMemoryPercent + limit%100*DefaultMaxMemoryPercent/100, fmt.Sprintf("%d%% of %s (%s)", DefaultMaxMemoryPercent, what, humanBytes(limit))
}

// read reads the machine's memory; a figure it cannot read is 0.
func (src memorySources) read() machineMemory {
	total, _ := readMemTotal(src.meminfo)
	cg, _ := src.cgroupLimit()
	return machineMemory{total: total, cgroup: cg}
}

// readMemTotal returns MemTotal of a /proc/meminfo file, in bytes.
func readMemTotal(file string) (uint64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			break
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil || kb > 1<<53 {
			break
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no MemTotal line in kB", file)
}

// cgroupMount is a mounted cgroup hierarchy holding the memory
// controller.
type cgroupMount struct {
	v2    bool
	root  string // the hierarchy's directory that is mounted
	point string // where it is mounted
}

// cgroupLimit returns the smallest memory limit on the path from this
// process's control group to the root of its hierarchy (0: none), over
// the cgroup v2 and v1 memory hierarchies that are mounted.
func (src memorySources) cgroupLimit() (uint64, error) {
	mounts, err := readCgroupMounts(src.mountinfo)
	if err != nil {
		return 0, err
	}
	groups, err := readProcCgroup(src.cgroup)
	if err != nil {
		return 0, err
	}
	var limit uint64
	for _, m := range mounts {
		group, ok := groups[m.v2]
		if !ok {
			continue
		}
		file := "memory.limit_in_bytes"
		if m.v2 {
			file = "memory.max"
		}
		if l := walkLimits(m, group, file); l != 0 && (limit == 0 || l < limit) {
			limit = l
		}
	}
	return limit, nil
}

// walkLimits returns the smallest limit in file from the directory of
// group up to the mount point (0: none readable or all unlimited).
func walkLimits(m cgroupMount, group, file string) uint64 {
	rel := "/"
	if r, ok := strings.CutPrefix(path.Clean(group), path.Clean(m.root)); ok {
		rel = path.Clean("/" + r)
	}
	var limit uint64
	for dir := rel; ; dir = path.Dir(dir) {
		if l := readLimitFile(path.Join(m.point, dir, file)); l != 0 && (limit == 0 || l < limit) {
			limit = l
		}
		if dir == "/" {
			return limit
		}
	}
}

// unlimitedCgroup is where a cgroup v1 limit means "none": v1 reports no
// limit as the largest page multiple below 2⁶³.
const unlimitedCgroup = 1 << 62

// readLimitFile reads a memory limit; "max", a v1 "no limit", a missing
// or unreadable file are 0.
func readLimitFile(file string) uint64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n >= unlimitedCgroup {
		return 0
	}
	return n
}

// readCgroupMounts lists the mounted hierarchies that can hold memory
// limits: every cgroup2 mount, and cgroup (v1) mounts with the memory
// controller.
func readCgroupMounts(file string) ([]cgroupMount, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root point options [optional…] - fstype source super-options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 {
			continue
		}
		m := cgroupMount{root: unescapeMount(fields[3]), point: unescapeMount(fields[4])}
		switch {
		case tail[0] == "cgroup2":
			m.v2 = true
		case tail[0] == "cgroup" && hasOption(tail[2], "memory"):
		default:
			continue
		}
		mounts = append(mounts, m)
	}
	return mounts, sc.Err()
}

// readProcCgroup returns this process's memory group in each version
// (key true: cgroup v2, false: v1's memory hierarchy) from
// /proc/self/cgroup's "id:controllers:path" lines.
func readProcCgroup(file string) (map[bool]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	groups := map[bool]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			groups[true] = parts[2]
		case hasOption(parts[1], "memory"):
			groups[false] = parts[2]
		}
	}
	if len(groups) == 0 {
		return nil, errors.New("no memory control group")
	}
	return groups, nil
}

func hasOption(list, name string) bool {
	for _, o := range strings.Split(list, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// statmFile holds the process's memory in pages (Linux).
const statmFile = "/proc/self/statm"

// residentBytes returns the resident set of the process from a
// /proc/self/statm file (its second field, in pages).
func residentBytes(file string) (uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0, fmt.Errorf("%s: want at least two fields", file)
	}
	pages, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return pages * uint64(os.Getpagesize()), nil
}
