package cuckoo_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bloomery/bloom/cuckoo"
)

func Example() {
	f, err := cuckoo.New(1000) // CF.RESERVE k 1000: 512 buckets of 2 slots
	if err != nil {
		panic(err)
	}
	f.AddString("apple")
	f.AddString("banana")
	fmt.Println(f.TestString("apple"), f.TestString("cherry"))
	f.DeleteString("apple")
	fmt.Println(f.TestString("apple"), f.Info().Items)
	// Output:
	// true false
	// false 1
}

func ExampleFilter_AddUnique() {
	f, _ := cuckoo.New(1000)
	for range 3 {
		added, err := f.AddUnique([]byte("x")) // CF.ADDNX
		fmt.Println(added, err)
	}
	f.Add([]byte("x")) // CF.ADD stores a duplicate
	fmt.Println(f.Count([]byte("x")))
	// Output:
	// true <nil>
	// false <nil>
	// false <nil>
	// 2
}

func ExampleWithExpansion() {
	f, _ := cuckoo.New(8, cuckoo.WithExpansion(0)) // never grows
	var err error
	n := 0
	for ; err == nil; n++ {
		err = f.AddString(fmt.Sprint(n))
	}
	fmt.Println(errors.Is(err, cuckoo.ErrFull), f.Filters())

	g, _ := cuckoo.New(8, cuckoo.WithExpansion(2)) // each new sub-filter has twice the buckets
	for i := range 100 {
		g.AddString(fmt.Sprint(i))
	}
	fmt.Println(g.Info().Filters > 1)
	// Output:
	// true 1
	// true
}

// A filter moves to RedisBloom chunk by chunk, as CF.SCANDUMP and
// CF.LOADCHUNK move it: here into another Filter.
func ExampleFilter_ScanDump() {
	f, _ := cuckoo.New(1000)
	f.AddString("apple")
	var g *cuckoo.Filter
	for it := int64(0); ; {
		next, data := f.ScanDump(it) // CF.SCANDUMP key it
		if next == 0 {
			break
		}
		if next == 1 {
			g, _ = cuckoo.LoadDumpHeader(data) // CF.LOADCHUNK key 1 header
		} else if err := g.LoadChunk(next, data); err != nil { // CF.LOADCHUNK key next data
			panic(err)
		}
		fmt.Println(next, len(data))
		it = next
	}
	fmt.Println(g.TestString("apple"), g.Info() == f.Info())
	// Output:
	// 1 38
	// 1025 1024
	// true true
}

func ExampleLoad() {
	f, _ := cuckoo.New(1000)
	f.AddString("apple")
	var file bytes.Buffer
	f.WriteTo(&file) // the Bloomery file format, kind 4
	g, err := cuckoo.Load(&file)
	fmt.Println(g.TestString("apple"), err)
	// Output: true <nil>
}

func ExampleFilter_TestMany() {
	f, _ := cuckoo.New(1000)
	st := f.AddMany([][]byte{[]byte("a"), []byte("b")}, nil) // CF.INSERT
	fmt.Println(st)
	fmt.Println(f.TestMany([][]byte{[]byte("a"), []byte("c")}, nil)) // CF.MEXISTS
	// Output:
	// [1 1]
	// [true false]
}
