//go:build !amd64 && !arm64

package prefetch

import "unsafe"

// Line does nothing here.
func Line(p unsafe.Pointer) {}
