//go:build !linux

package server

// writeLog writes all of b to f through the runtime (aof_write_linux.go
// explains the Linux variant).
func (f *logFile) writeLog(b []byte) (int, error) { return f.File.Write(b) }
