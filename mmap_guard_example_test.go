//go:build linux && (amd64 || arm64)

// The example needs a host where OpenFile maps the file (little-endian
// Unix), so that truncating it matters; these are the common ones.

package bloom_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/bloomery/bloom"
)

func ExampleMappedFilter_Guard() {
	f, err := bloom.New(100_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	f.AddString("apple")
	path := writeExample("words.bloom", f)
	defer os.RemoveAll(filepath.Dir(path))
	m, err := bloom.OpenFile(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	// Someone truncates the file while it is mapped: a lookup would kill
	// the process with SIGBUS; inside Guard it is an error.
	if err := os.Truncate(path, 0); err != nil {
		log.Fatal(err)
	}
	var found bool
	err = m.Guard(func() { found = m.TestString("apple") })
	fmt.Println(found, errors.Is(err, bloom.ErrFileChanged))
	// Output: false true
}
