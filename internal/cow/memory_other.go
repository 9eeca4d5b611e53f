//go:build !unix

package cow

// mapPages allocates n bytes on the heap where there are no anonymous
// mappings; they go back with the collector.
func mapPages(n int) []byte { return make([]byte, n) }

func unmapPages([]byte) {}
