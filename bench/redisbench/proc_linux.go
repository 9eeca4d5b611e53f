package redisbench

import (
	"os/exec"
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
