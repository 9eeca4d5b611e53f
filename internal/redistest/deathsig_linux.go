package redistest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel SIGKILL the server if the test binary dies
// without running its cleanups (a test timeout, a crash), so no redis-server
// outlives the tests that started it.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
