//go:build !linux

package server

import "os"

// allocate is not available here: a full disk is found by the write.
func allocate(*os.File, int64, int64) error { return errNoPrealloc }
