package atomicfile_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/bloomery/bloom/internal/atomicfile"
)

func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "atomicfile-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "greeting.txt")

	// Readers of path see the old content or all of the new, never part.
	if err := atomicfile.WriteFile(path, 0o666, strings.NewReader("hello\n")); err != nil {
		log.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(b))
	// Output: hello
}
