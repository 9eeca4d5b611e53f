package bloom_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/bloomery/bloom"
)

func ExampleScalable_AppendBinary() {
	s, err := bloom.NewScalable(100, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	s.AddString("apple")
	// Records of many filters in one buffer, reused: no allocation per
	// filter once the buffer is large enough.
	buf := []byte("record:")
	buf, err = s.AppendBinary(buf)
	if err != nil {
		log.Fatal(err)
	}
	back, err := bloom.LoadScalable(bytes.NewReader(buf[len("record:"):]))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back.TestString("apple"), back.TestString("pear"))
	// Output: true false
}
