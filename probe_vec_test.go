package bloom

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// scalarTwin is f with the scalar Test: the same bit array and geometry,
// mode modeBlocked.
func scalarTwin(f *Filter) *Filter {
	g := *f
	g.mode = modeBlocked
	return &g
}

func needVec(t testing.TB) {
	t.Helper()
	if !vecProbe {
		t.Skip("this CPU has no AVX-512F: blocked filters use the scalar Test only, which the other tests cover")
	}
}

// TestVecProbeMode checks which filters get the vector Test.
func TestVecProbeMode(t *testing.T) {
	needVec(t)
	cases := []struct {
		p    float64
		opts []Option
		want uint8
	}{
		{0.01, nil, modeBlockedVec},                      // k = 7
		{0.2, nil, modeBlockedVec},                       // small k
		{0.001, nil, modeBlocked},                        // k = 9: two probe words
		{0.01, []Option{WithConcurrent()}, modeOther},    // atomics
		{0.01, []Option{WithLayout(Classic)}, modeOther}, // not blocked
	}
	for _, c := range cases {
		f, err := New(1000, c.p, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if f.mode != c.want {
			t.Errorf("p=%g k=%d %d options: mode %d, want %d", c.p, f.k, len(c.opts), f.mode, c.want)
		}
	}
}

// TestVecProbeMatchesScalar checks the vector Test against the scalar
// probes: on random blocks of every density for every k it serves, and
// through whole filters (Test, TestHash, TestMany) against a scalar twin.
func TestVecProbeMatchesScalar(t *testing.T) {
	needVec(t)
	r := rand.New(rand.NewPCG(7, 11))
	for _, density := range []float64{0, 0.1, 0.5, 0.8, 0.95, 1} {
		var blk [8]uint64
		agree, set := 0, 0
		for range 20000 {
			for i := range blk {
				blk[i] = 0
				for b := range 64 {
					if r.Float64() < density {
						blk[i] |= 1 << b
					}
				}
			}
			w := r.Uint64()
			for k := uint32(1); k <= fieldsPerWord; k++ {
				want := missing(&blk, w, k) == 0
				if got := testBlockVec7(&blk, w, k); got != want {
					t.Fatalf("density %g k=%d w=%#x block %x: vector %v, scalar %v", density, k, w, blk, got, want)
				}
				agree++
				if want {
					set++
				}
			}
		}
		// Both answers must occur where they can, or the check above
		// compared nothing.
		if density > 0 && density < 1 && (set == 0 || set == agree) {
			t.Fatalf("density %g: %d of %d all set", density, set, agree)
		}
	}

	for _, p := range []float64{0.3, 0.1, 0.05, 0.02, 0.01, 0.005} {
		f, err := New(20000, p)
		if err != nil {
			t.Fatal(err)
		}
		if f.mode != modeBlockedVec {
			t.Fatalf("p=%g k=%d: mode %d", p, f.k, f.mode)
		}
		g := scalarTwin(f)
		items := make([][]byte, 60000)
		for i := range items {
			items[i] = binary.LittleEndian.AppendUint64([]byte("vec:"), uint64(i))
			if i%2 == 0 {
				f.Add(items[i])
			}
		}
		got, want := f.TestMany(items, nil), g.TestMany(items, nil)
		pos := 0
		for i, it := range items {
			v := f.Test(it)
			if v != g.Test(it) || v != f.TestHash(f.Hash(it)) || v != got[i] || v != want[i] {
				t.Fatalf("p=%g item %d: Test %v, scalar %v, TestHash %v, TestMany %v, scalar TestMany %v",
					p, i, v, g.Test(it), f.TestHash(f.Hash(it)), got[i], want[i])
			}
			if i%2 == 0 && !v {
				t.Fatalf("p=%g: false negative on item %d", p, i)
			}
			if v {
				pos++
			}
		}
		if pos == 30000 || pos == len(items) {
			t.Errorf("p=%g: %d positives of %d (no false positive at all, or all)", p, pos, len(items))
		}
	}
}

// FuzzVecProbe checks the vector Test against the scalar probes on any
// block, probe word and k.
func FuzzVecProbe(f *testing.F) {
	needVec(f)
	f.Add(make([]byte, 64), uint64(0), uint8(7))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ^uint64(0), uint8(1))
	f.Add([]byte("a block that is shorter than sixty-four bytes"), uint64(0x0123456789abcdef), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, w uint64, kb uint8) {
		var blk [8]uint64
		var raw [64]byte
		copy(raw[:], data)
		for i := range blk {
			blk[i] = binary.LittleEndian.Uint64(raw[8*i:])
		}
		k := 1 + uint32(kb)%fieldsPerWord
		if got, want := testBlockVec7(&blk, w, k), missing(&blk, w, k) == 0; got != want {
			t.Fatalf("k=%d w=%#x block %x: vector %v, scalar %v", k, w, blk, got, want)
		}
	})
}

func ExampleFilter_Test_vector() {
	// Whatever the CPU, the vector and the scalar Test set and read the
	// same bits, so answers (and files) never depend on where they ran.
	f, _ := New(1000, 0.01)
	f.AddString("alpha")
	fmt.Println(f.TestString("alpha"), f.TestString("omega"))
	// Output: true false
}
