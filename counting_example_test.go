package bloom_test

import (
	"fmt"
	"log"

	"github.com/bloomery/bloom"
)

func ExampleNewCounting() {
	// A counting filter for up to 10,000 distinct items at a
	// false-positive rate of at most 1%: 4-bit counters instead of bits,
	// so that items can be removed and counted.
	c, err := bloom.NewCounting(10_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	c.AddString("apple")
	c.AddString("apple")
	c.AddString("cherry")
	fmt.Println(c.TestString("apple"), c.CountString("apple"))
	fmt.Println(c.TestString("cherry"), c.CountString("cherry"))
	fmt.Println(c.TestString("durian"), c.CountString("durian"))
	fmt.Println(c.Inserted(), "items,", c.Counters(), "counters,", c.Bytes(), "bytes, k =", c.K())
	// Output:
	// true 2
	// true 1
	// false 0
	// 3 items, 96704 counters, 48352 bytes, k = 7
}

func ExampleCounting_Remove() {
	c, err := bloom.NewCounting(1000, 0.001)
	if err != nil {
		log.Fatal(err)
	}
	c.AddString("session-1")
	c.AddString("session-2")
	fmt.Println(c.RemoveString("session-1")) // present: removed
	fmt.Println(c.TestString("session-1"))
	fmt.Println(c.RemoveString("session-1")) // absent now: nothing changes
	fmt.Println(c.TestString("session-2"))   // other items stay

	// A counter stops at 15 and is never decremented after that, so an
	// item added 20 times stays present, whatever is removed.
	for range 20 {
		c.AddString("hot")
	}
	for range 20 {
		c.RemoveString("hot")
	}
	fmt.Println(c.TestString("hot"), c.CountString("hot"))
	// Output:
	// true
	// false
	// false
	// true
	// true 15
}
