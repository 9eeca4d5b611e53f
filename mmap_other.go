//go:build !unix

package bloom

import "os"

func mmap(*os.File, int) ([]byte, error) { return nil, errNoMmap }

func munmap([]byte) error { return nil }
