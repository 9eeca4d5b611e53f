//go:build !linux

package server

import "syscall"

// dieWithParent: the second pass runs in a process of its own only on
// Linux (haveEventLoop).
func dieWithParent() *syscall.SysProcAttr { return nil }
