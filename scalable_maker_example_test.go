package bloom_test

import (
	"fmt"
	"log"

	"github.com/bloomery/bloom"
)

func ExampleScalableMaker() {
	// One maker for many filters alike: the options are checked and the
	// first sub-filter sized once.
	m, err := bloom.NewScalableMaker(100, 0.01, bloom.WithRedisBloomSplit())
	if err != nil {
		log.Fatal(err)
	}
	a, b := m.New(), m.New()
	a.AddString("apple")
	fmt.Println(a.TestString("apple"), b.TestString("apple"))

	// Init puts the first sub-filter's bits where the caller wants them,
	// here in one allocation with the filter itself.
	type value struct {
		f    bloom.Scalable
		bits [19]uint64
	}
	fmt.Println(m.Words(), m.FirstSizing().Layout)
	v := new(value)
	if err := m.Init(&v.f, v.bits[:]); err != nil {
		log.Fatal(err)
	}
	v.f.AddString("pear")
	fmt.Println(v.f.TestString("pear"), v.bits != [19]uint64{})
	// Output:
	// true false
	// 19 classic
	// true true
}
