//go:build unix

package atomicfile

import (
	"fmt"
	"os"
)

// SyncDir fsyncs the directory dir, so that files created, renamed or
// removed in it stay so after a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory: %w", err)
	}
	err = fsync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
