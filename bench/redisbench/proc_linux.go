package redisbench

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// setDeathSignal has the kernel kill cmd's process when this process dies
// without stopping it.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// ProcessCPU is the CPU time (user and system) this process has used so
// far, and true; false where it is not measured.
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// clockTicks is the unit of /proc/PID/stat's times (sysconf(_SC_CLK_TCK),
// 100 on every Linux this runs on).
const clockTicks = 100

// PidCPU is the CPU time (user and system) process pid has used so far,
// with that of its children it has waited for, from /proc/pid/stat, and
// true; false where it is not measured. The children count because
// redis-server saves its RDB snapshots and rewrites its append-only file
// in forked children, work a server that does not fork pays in its own
// time.
func PidCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // from field 3 (state) on
	if len(f) < 15 {
		return 0, false
	}
	ticks := int64(0)
	for _, field := range f[11:15] { // fields 14-17: utime, stime, cutime, cstime
		t, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += t
	}
	return time.Duration(ticks) * time.Second / clockTicks, true
}

// MachineCPU is the CPU time every core of the machine has spent busy so
// far (user, nice, system, irq and softirq of /proc/stat's cpu line), and
// true; false where it is not measured. Over a run, busy less the
// processes' own times is what the kernel's threads and everything else
// spent, and the cores times the wall time less busy is what nobody used.
func MachineCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, false
	}
	var t [7]int64 // user nice system idle iowait irq softirq
	for i := range t {
		if t[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return 0, false
		}
	}
	return time.Duration(t[0]+t[1]+t[2]+t[5]+t[6]) * time.Second / clockTicks, true
}
