//go:build !linux

package redistest

import "os/exec"

// setDeathSignal does nothing here: only Linux can tie a child's life to
// its parent's, so a test binary that dies without cleanups may leave
// servers behind.
func setDeathSignal(*exec.Cmd) {}
