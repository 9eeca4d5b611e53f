package bloom_test

import (
	"fmt"

	"github.com/bloomery/bloom"
)

// Many small filters made alike, written as one shape and a state each,
// as the server's snapshots write a keyspace of small filters.
func ExampleStateLoader() {
	var shape []byte
	var states [][]byte
	for _, user := range []string{"ann", "bob"} {
		f, err := bloom.NewScalable(100, 0.01)
		if err != nil {
			panic(err)
		}
		f.AddString(user + ":article-1")
		sh, state, ok := f.AppendState(nil)
		if !ok {
			panic("a grown filter has no state")
		}
		if shape == nil {
			if shape, err = sh.AppendBinary(nil); err != nil {
				panic(err)
			}
		}
		states = append(states, state)
	}
	l, err := bloom.NewStateLoader(shape)
	if err != nil {
		panic(err)
	}
	for i, st := range states {
		f, err := l.Load(st)
		if err != nil {
			panic(err)
		}
		fmt.Println(i, len(st), f.TestString("ann:article-1"), f.TestString("bob:article-1"))
	}
	fmt.Println("shape", len(shape), "bytes")
	// Output:
	// 0 144 true false
	// 1 144 false true
	// shape 192 bytes
}
