//go:build unix

package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDir takes an exclusive flock on the data directory itself, so that
// a second server on the same directory fails at once instead of
// interleaving writes. The lock is held on the directory's inode, which
// no one can delete while it holds files, so removing a file cannot
// defeat it (a lock on dir/LOCK could be: after rm LOCK a second server
// locked a new file). The lock goes with the process (a crash releases
// it). dir/LOCK holds the owner's PID, for people only. It returns the
// open directory that holds the lock.
func lockDir(dir string) (*os.File, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("server: open data directory: %w", err)
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		d.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("server: data directory %s is in use by another bloomery server%s; "+
				"stop that server or choose another --dir", dir, lockOwner(dir))
		}
		return nil, fmt.Errorf("server: lock data directory %s: %w", dir, err)
	}
	// The PID is information, so failing to write it is not an error.
	os.WriteFile(filepath.Join(dir, lockName), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	return d, nil
}

// lockOwner names the PID recorded in dir/LOCK, if any.
func lockOwner(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, lockName))
	if pid := strings.TrimSpace(string(b)); err == nil && pid != "" {
		return " (PID " + pid + " according to " + filepath.Join(dir, lockName) + ")"
	}
	return ""
}

// unlockDir releases lockDir's lock.
func unlockDir(d *os.File) error {
	syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
	return d.Close()
}
