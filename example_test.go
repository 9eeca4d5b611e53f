package bloom_test

import (
	"bytes"
	"fmt"
	"log"
	"sync"

	"github.com/bloomery/bloom"
)

func Example() {
	// A filter for up to 10,000 distinct items at a false-positive rate of
	// at most 0.1%.
	f, err := bloom.New(10_000, 0.001)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.Add([]byte("apple")))  // new
	fmt.Println(f.Add([]byte("apple")))  // already present
	fmt.Println(f.AddString("cherry"))   // strings without copying
	fmt.Println(f.Test([]byte("apple"))) // probably present
	fmt.Println(f.TestString("durian"))  // definitely not present
	fmt.Println(f.Inserted())
	// Output:
	// true
	// false
	// true
	// true
	// false
	// 2
}

func ExampleFilter_TestMany() {
	f, err := bloom.New(1000, 1e-6)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.AddMany([][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("a")}), "new")

	queries := [][]byte{[]byte("a"), []byte("x"), []byte("c"), []byte("y")}
	results := make([]bool, 0, len(queries)) // reused: no allocation
	results = f.TestMany(queries, results)
	for i, q := range queries {
		fmt.Printf("%s %v\n", q, results[i])
	}
	// Output:
	// 3 new
	// a true
	// x false
	// c true
	// y false
}

func ExampleWithKey() {
	// For items chosen by untrusted parties: a keyed hash (SipHash-2-4),
	// so that nobody without the key can craft colliding items.
	key := [16]byte{0x5e, 0xc1, 0x2e, 0x7a, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc}
	f, err := bloom.New(1000, 1e-6, bloom.WithKey(key))
	if err != nil {
		log.Fatal(err)
	}
	f.AddString("user-1")
	fmt.Println(f.Keyed(), f.HashID())
	fmt.Println(f.TestString("user-1"), f.TestString("user-2"))
	// Output:
	// true siphash-2-4-128
	// true false
}

func ExampleWithLayout() {
	// The classic layout needs fewer bits per key than the default blocked
	// one, at the cost of one cache miss per probe on large filters.
	f, err := bloom.New(1_000_000, 1e-6, bloom.WithLayout(bloom.Classic))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: k=%d, %.2f bits per key\n", f.Layout(), f.K(), f.Sizing().BitsPerKey())
	f.AddString("x")
	fmt.Println(f.TestString("x"), f.TestString("y"))
	// Output:
	// classic: k=20, 28.99 bits per key
	// true false
}

func ExampleSize() {
	for _, layout := range []bloom.Layout{bloom.Blocked, bloom.Classic} {
		s, err := bloom.Size(1_000_000, 0.01, layout)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: k=%d, %.2f bits per key, %d bytes\n", s.Layout, s.K, s.BitsPerKey(), s.Bytes())
	}
	// Output:
	// blocked: k=7, 10.13 bits per key, 1266752 bytes
	// classic: k=7, 9.67 bits per key, 1208440 bytes
}

func ExampleFilter_Union() {
	a, _ := bloom.New(1000, 1e-6)
	b, _ := bloom.New(1000, 1e-6) // the same n, p and options: compatible
	a.AddString("from a")
	b.AddString("from b")
	if err := a.Union(b); err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.TestString("from a"), a.TestString("from b"), a.TestString("from c"))

	c, _ := bloom.New(2000, 1e-6) // a different size
	fmt.Println(a.Union(c))
	// Output:
	// true true false
	// bloom: filters are incompatible: sizes differ: 44544 and 86528 bits
}

func ExampleLoad() {
	f, _ := bloom.New(1000, 0.01)
	f.AddString("saved")

	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		log.Fatal(err)
	}
	fmt.Println(buf.Len() == int(f.EncodedSize()))

	g, err := bloom.Load(&buf)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.TestString("saved"), g.Inserted(), g.Sizing() == f.Sizing())
	// Output:
	// true
	// true 1 true
}

func ExampleHash64() {
	// Items you already hash to 64 bits, e.g. IDs: Hash64 expands the hash
	// to the 128 bits a filter needs.
	f, _ := bloom.New(1000, 1e-6)
	for _, id := range []uint64{7, 42, 1 << 40} {
		f.AddHash(bloom.Hash64(id))
	}
	fmt.Println(f.TestHash(bloom.Hash64(42)), f.TestHash(bloom.Hash64(43)))
	// Output:
	// true false
}

func ExampleWithConcurrent() {
	f, err := bloom.New(40_000, 1e-6, bloom.WithConcurrent())
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 10_000 {
				f.AddString(fmt.Sprintf("w%d-%d", w, i))
			}
		})
	}
	wg.Wait()

	missing := 0
	for w := range 4 {
		for i := range 10_000 {
			if !f.TestString(fmt.Sprintf("w%d-%d", w, i)) {
				missing++
			}
		}
	}
	fmt.Println("missing:", missing)
	// Output:
	// missing: 0
}
