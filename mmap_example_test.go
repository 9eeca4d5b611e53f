package bloom_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/bloomery/bloom"
)

func ExampleOpenFile() {
	dir, err := os.MkdirTemp("", "bloom-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "words.bloom")

	// Build a filter and write it to a file.
	f, err := bloom.New(1000, 0.001)
	if err != nil {
		log.Fatal(err)
	}
	f.AddString("apple")
	f.AddString("cherry")
	out, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := f.WriteTo(out); err != nil {
		log.Fatal(err)
	}
	if err := out.Close(); err != nil {
		log.Fatal(err)
	}

	// Use the file in place: the bit array is mapped, not read.
	m, err := bloom.OpenFile(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println(m.TestString("apple"), m.TestString("durian"), m.Inserted())
	// Output: true false 2
}
