//go:build !unix

package cow

import "errors"

// mapPages refuses where there are no anonymous mappings: the pages come
// from the heap.
func mapPages(int) ([]byte, error) { return nil, errors.New("cow: no anonymous mappings here") }

func unmapPages([]byte) {}
