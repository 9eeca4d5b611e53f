//go:build !linux

package hugepage

// Advise does nothing on this OS.
func Advise([]byte) {}
