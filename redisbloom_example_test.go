package bloom_test

import (
	"fmt"
	"log"

	"github.com/bloomery/bloom"
)

// A Scalable filter in the RedisBloom layout is RedisBloom's filter bit
// for bit: what BF.RESERVE key 0.001 2000 makes, growing as BF.ADD grows
// it (RedisBloom's BF.INFO gives the same figures for the same adds; one
// of the 5000 users is a false positive there too). DumpChunk gives the replies of BF.SCANDUMP key 0, 1, …, which
// RedisBloom's BF.LOADCHUNK takes, and LoadDumpHeader and LoadChunk load
// what a real RedisBloom's BF.SCANDUMP gives.
func ExampleLoadDumpHeader() {
	s, err := bloom.NewScalable(2000, 0.001, bloom.WithLayout(bloom.RedisBloom))
	if err != nil {
		log.Fatal(err)
	}
	in := s.Info()
	fmt.Println("BF.INFO Size:", in.RedisBloomSize())
	for i := range 5000 {
		if _, err := s.AddString(fmt.Sprint("user:", i)); err != nil {
			log.Fatal(err)
		}
	}

	// BF.SCANDUMP: iterator 0 is the header; the last chunk's iterator
	// comes back 0.
	type reply struct {
		it   int64
		data []byte
	}
	var dump []reply
	for it := int64(0); ; {
		next, data, err := s.DumpChunk(it)
		if err != nil {
			log.Fatal(err)
		}
		if next == 0 {
			break
		}
		dump = append(dump, reply{next, data})
		it = next
	}

	// BF.LOADCHUNK each reply with its iterator: the header first.
	t, err := bloom.LoadDumpHeader(dump[0].data)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range dump[1:] {
		if err := t.LoadChunk(r.it, r.data); err != nil {
			log.Fatal(err)
		}
	}
	in = t.Info()
	fmt.Println("sub-filters:", in.Filters, "capacity:", in.Capacity, "items:", in.Items, "Size:", in.RedisBloomSize())
	fmt.Println(t.TestString("user:42"))
	// Output:
	// BF.INFO Size: 4056
	// sub-filters: 2 capacity: 6000 items: 4999 Size: 12752
	// true
}
