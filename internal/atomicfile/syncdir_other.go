//go:build !unix

package atomicfile

// SyncDir does nothing: directories cannot be fsynced on this platform.
func SyncDir(string) error { return nil }
