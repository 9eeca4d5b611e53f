//go:build !linux

package redisbench

import (
	"os/exec"
	"time"
)

// setDeathSignal does nothing here: only Linux kills a child when its
// parent dies. Stop the server to end it.
func setDeathSignal(*exec.Cmd) {}

// ProcessCPU reports false: this process's CPU time is measured on Linux
// only.
func ProcessCPU() (time.Duration, bool) { return 0, false }

// PidCPU is not measured here.
func PidCPU(int) (time.Duration, bool) { return 0, false }

// MachineCPU is not measured here.
func MachineCPU() (time.Duration, bool) { return 0, false }
