//go:build amd64 || arm64

package prefetch

import "unsafe"

// Line asks for the cache line holding p.
//
//go:noescape
func Line(p unsafe.Pointer)
