//go:build !unix

package server

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir opens dir/LOCK. Without flock (this platform), a second
// server on the same directory is not detected: do not start one
// (docs/SERVER.md).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("server: open lock file: %w", err)
	}
	return f, nil
}

func unlockDir(f *os.File) error { return f.Close() }
