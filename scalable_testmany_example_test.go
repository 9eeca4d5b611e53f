package bloom_test

import (
	"fmt"
	"log"

	"github.com/bloomery/bloom"
)

// A filter that grew past its first sub-filter tests a batch of items in
// one call: the items of every sub-filter are found.
func ExampleScalable_TestMany() {
	s, err := bloom.NewScalable(100, 1e-4)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 500 {
		s.AddString(fmt.Sprint("seen-", i))
	}
	queries := [][]byte{[]byte("seen-0"), []byte("seen-499"), []byte("never")}
	results := s.TestMany(queries, nil)
	fmt.Println(s.NumFilters() > 1, results)
	// Output:
	// true [true true false]
}
