package bloom_test

import (
	"fmt"
	"log"

	"github.com/bloomery/bloom"
)

func ExampleScalable_SubFilters() {
	s, err := bloom.NewScalable(100, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 250 {
		s.AddString(fmt.Sprint("item-", i))
	}
	o := s.Growth()
	fmt.Printf("expansion %d, first share %g, tightening %g\n", o.Expansion, o.FirstShare, o.Tightening)
	for i, sub := range s.SubFilters() {
		fmt.Printf("sub-filter %d: capacity %d at %.2g, %d items, bits set: %v\n",
			i, sub.Sizing.N, sub.Sizing.P, sub.Items, sub.SetBits > 0)
	}
	// Output:
	// expansion 2, first share 0.9, tightening 0.5
	// sub-filter 0: capacity 100 at 0.009, 100 items, bits set: true
	// sub-filter 1: capacity 200 at 0.0005, 150 items, bits set: true
}

func ExampleCounting_Stats() {
	c, err := bloom.NewCounting(1000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	for range 20 {
		c.AddString("apple") // its counters saturate at 15
	}
	st := c.Stats()
	fmt.Println(st.InUse == uint64(c.K()), st.Saturated == st.InUse)
	// Output: true true
}
