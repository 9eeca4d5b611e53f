// Package atomicfile writes files that are replaced whole or not at all
// and that survive a crash once written: the content goes to a temporary
// file in the target's directory, which is fsynced, renamed over the
// target, and the directory fsynced, so that after a crash the target is
// either its old content or all of the new, never a part, and once
// Commit returns the new content is on disk.
//
// A File is used by one goroutine. Two writers of one target do not
// corrupt it (each has its own temporary file): the last rename wins.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File is a new file that replaces its target only when committed. It is
// an io.Writer.
type File struct {
	f    *os.File
	path string
	done bool // committed or aborted
}

// The file operations, replaced by tests to record them or to fail.
var (
	fsync  = (*os.File).Sync
	rename = os.Rename
)

// Create creates the temporary file for path: a hidden file beside it
// (a rename within one file system is atomic) with permissions perm less
// the umask, as os.Create gives a new file. Nothing happens to path until
// Commit; call Abort (or defer it) to remove the temporary file when
// giving up.
func Create(path string, perm fs.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		tmp := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &File{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("atomicfile: no free temporary name beside %s", path)
}

// Write writes to the temporary file.
func (a *File) Write(p []byte) (int, error) { return a.f.Write(p) }

// Sync fsyncs what is written so far, as Commit will (a writer of a large
// file fsyncs as it goes, so that the disk takes it in pieces rather than
// all at the end).
func (a *File) Sync() error { return fsync(a.f) }

// Name is the temporary file's path.
func (a *File) Name() string { return a.f.Name() }

// Seek moves the temporary file's offset (io.Seeker): a writer that
// leaves holes in a sparse file seeks over them.
func (a *File) Seek(offset int64, whence int) (int64, error) { return a.f.Seek(offset, whence) }

// Truncate sets the temporary file's size: a sparse file that ends in a
// hole is extended to its length this way.
func (a *File) Truncate(size int64) error { return a.f.Truncate(size) }

// IsTemp reports whether name, a file's base name, is one of Create's
// temporary files: what a crash before Commit or Abort leaves behind, for
// a program to delete at its next start.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// Commit fsyncs the temporary file, renames it over the target and
// fsyncs the directory. On an error before the rename the target is
// unchanged and the temporary file removed; an error fsyncing the
// directory leaves the new content in place but perhaps not yet durable.
func (a *File) Commit() error {
	if a.done {
		return fmt.Errorf("atomicfile: %s: already committed or aborted", a.path)
	}
	a.done = true
	err := fsync(a.f)
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rename(a.f.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("writing %s: %w", a.path, err)
	}
	if err := SyncDir(filepath.Dir(a.path)); err != nil {
		return fmt.Errorf("writing %s: %w", a.path, err)
	}
	return nil
}

// Abort removes the temporary file, leaving the target as it was. After
// Commit it does nothing, so it can be deferred.
func (a *File) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.f.Close()
	os.Remove(a.f.Name())
}

// WriteFile replaces path with what w writes, atomically and durably (see
// the package doc); a new file gets permissions perm less the umask.
func WriteFile(path string, perm fs.FileMode, w io.WriterTo) error {
	a, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer a.Abort()
	if _, err := w.WriteTo(a); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return a.Commit()
}
