//go:build !linux

package server

import "os"

// logOpenFlags open a log for appending.
const logOpenFlags = os.O_CREATE | os.O_WRONLY | os.O_APPEND

// logMap is empty: appends are write(2)s (aof_map_linux.go explains the
// Linux variant).
type logMap struct{}

func newLogFile(f *os.File, _ int64) *logFile { return &logFile{File: f, sysfd: -1} }

// writeLog writes all of b to f through the runtime.
func (f *logFile) writeLog(b []byte) (int, error) { return f.File.Write(b) }

func (f *logFile) Allocate(off, n int64) error { return allocate(f.File, off, n) }
