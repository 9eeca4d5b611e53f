package bloom_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/bloomery/bloom"
)

// writeExample writes w's encoding to name in a new directory and
// returns its path; remove the directory when done.
func writeExample(name string, w interface{ MarshalBinary() ([]byte, error) }) string {
	dir, err := os.MkdirTemp("", "bloom-example")
	if err != nil {
		log.Fatal(err)
	}
	b, err := w.MarshalBinary()
	if err != nil {
		log.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		log.Fatal(err)
	}
	return path
}

func ExampleOpenAny() {
	s, err := bloom.NewScalable(100, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	s.AddString("apple")
	path := writeExample("seen.bloom", s)
	defer os.RemoveAll(filepath.Dir(path))

	// A tool taking "a filter file" need not know which kind it is.
	f, err := bloom.OpenAny(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fmt.Println(f.Kind, f.TestMany([][]byte{[]byte("apple"), []byte("durian")}, nil))
	// Output: scalable filter [true false]
}

func ExampleLoadAny() {
	c, err := bloom.NewCounting(1000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	c.AddString("apple")
	var stream bytes.Buffer // a pipe or a socket would do as well
	if _, err := c.WriteTo(&stream); err != nil {
		log.Fatal(err)
	}

	f, err := bloom.LoadAny(&stream)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.Kind, f.Counting.TestString("apple"), f.Counting.Inserted())

	// The loader of one kind says which kind it was given instead.
	_, err = bloom.Load(bytes.NewReader(must(c.MarshalBinary())))
	var wrong *bloom.KindError
	fmt.Println(errors.As(err, &wrong), wrong.Got)
	// Output:
	// counting filter true 1
	// true counting filter
}

func must(b []byte, err error) []byte {
	if err != nil {
		log.Fatal(err)
	}
	return b
}
