package server

import "syscall"

// dieWithParent makes the second pass's process end with the first's
// (a test binary killed by its timeout, say).
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
