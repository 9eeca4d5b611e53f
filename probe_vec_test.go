package bloom

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
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
		t.Skip("the vector Test is off in this process (no AVX-512F, a race-detector build, the purego tag or GODEBUG=cpu.avx512f=off): blocked filters use the scalar Test, which the other tests cover")
	}
}

// TestVecProbeMode checks which filters get the vector Test, at every
// boundary of k, and that each answers as a scalar twin of its bits.
func TestVecProbeMode(t *testing.T) {
	needVec(t)
	for k := uint32(1); k <= maxStraightK+2; k++ {
		want := uint8(modeBlockedVec7)
		switch {
		case k > maxStraightK:
			want = modeOther // the loop through testBlockedLong
		case k > fieldsPerWord:
			want = modeBlockedVec14
		}
		f, err := NewSized(Sizing{Layout: Blocked, N: 1000, P: 0.5, Bits: 64 * BlockBits, K: k})
		if err != nil {
			t.Fatal(err)
		}
		if f.mode != want {
			t.Errorf("k=%d: mode %d, want %d", k, f.mode, want)
			continue
		}
		if want == modeOther {
			continue
		}
		g, items, pos := scalarTwin(f), make([][]byte, 3000), 0
		for i := range items {
			items[i] = binary.LittleEndian.AppendUint64([]byte("mode:"), uint64(i))
			if i < 1000 {
				f.Add(items[i])
			}
		}
		for i, it := range items {
			v := f.Test(it)
			if v != g.Test(it) || (i < 1000 && !v) {
				t.Fatalf("k=%d item %d: vector %v, scalar %v", k, i, v, g.Test(it))
			}
			if v {
				pos++
			}
		}
		if pos == len(items) {
			t.Fatalf("k=%d: every item tests present", k)
		}
	}
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"concurrent", []Option{WithConcurrent()}}, // atomics
		{"classic", []Option{WithLayout(Classic)}}, // not blocked
	} {
		if f, _ := New(1000, 0.01, c.opts...); f.mode != modeOther {
			t.Errorf("%s: mode %d, want %d", c.name, f.mode, modeOther)
		}
	}
}

// TestScalarProbesAgree checks the scalar reference of the vector tests:
// testBlocked's straight line against testBlockedLong's loop, for every k
// the straight line serves, on random blocks. It runs on every CPU.
func TestScalarProbesAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	var blk [8]uint64
	for range 20000 {
		for i := range blk {
			blk[i] = r.Uint64() | r.Uint64() // about three bits in four set
		}
		h := Hash{H1: r.Uint64(), H2: r.Uint64()}
		for k := uint32(1); k <= maxStraightK; k++ {
			f := Filter{wp: &blk[0], nw: 8, k: k, mode: modeBlocked}
			if a, b := f.testBlocked(h), f.testBlockedLong(h); a != b {
				t.Fatalf("k=%d h=%x block %x: straight %v, loop %v", k, h, blk, a, b)
			}
		}
	}
}

// TestVecProbeGodebug checks the documented switch: with
// GODEBUG=cpu.avx512f=off (read by golang.org/x/sys/cpu) new filters take
// the scalar path, and answer the same.
func TestVecProbeGodebug(t *testing.T) {
	if os.Getenv("BLOOM_VEC_CHILD") != "" {
		f, _ := New(1000, 0.01)
		g, _ := New(1000, 0.001)
		f.AddString("x")
		fmt.Printf("modes %d %d %v\n", f.mode, g.mode, f.TestString("x"))
		return
	}
	needVec(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestVecProbeGodebug$", "-test.v")
	cmd.Env = append(os.Environ(), "BLOOM_VEC_CHILD=1", "GODEBUG=cpu.avx512f=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := fmt.Sprintf("modes %d %d true", modeBlocked, modeBlocked); !strings.Contains(string(out), want) {
		t.Fatalf("child printed %q, want %q", out, want)
	}
}

// TestVecProbeMatchesScalar checks the vector Test against the scalar
// probes: on random blocks of every density for every k it serves, and
// through whole filters (Test, TestHash, TestMany) against a scalar twin.
func TestVecProbeMatchesScalar(t *testing.T) {
	needVec(t)
	forRandomBlocks(t, rand.New(rand.NewPCG(7, 11)), 20000, 1, func(blk [8]uint64, h Hash, k uint32) bool {
		want := scalarProbe(&blk, h, k)
		if got := vecProbeAt(&blk, h, k); got != want {
			t.Fatalf("k=%d h=%x block %x: vector %v, scalar %v", k, h, blk, got, want)
		}
		return want
	})

	for _, p := range []float64{0.3, 0.1, 0.05, 0.02, 0.01, 0.005, 0.001, 1e-4, 1e-5} {
		f, err := New(20000, p)
		if err != nil {
			t.Fatal(err)
		}
		if f.mode != modeBlockedVec7 && f.mode != modeBlockedVec14 {
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
		if (p >= 0.001 && pos == 30000) || pos == len(items) {
			t.Errorf("p=%g: %d positives of %d (no false positive at all, or all)", p, pos, len(items))
		}
	}
}

// FuzzVecProbe checks the vector Test against the scalar probes on any
// block, hash and k.
func FuzzVecProbe(f *testing.F) {
	needVec(f)
	ones := bytes.Repeat([]byte{0xff}, 64)
	f.Add(make([]byte, 64), uint64(0), uint64(0), uint8(7))
	f.Add(ones, uint64(1), ^uint64(0), uint8(6))     // every probe set: true
	f.Add(ones, uint64(7), uint64(12345), uint8(13)) // two probe words, true
	f.Add(append(ones[:63:63], 0x7f), uint64(3), ^uint64(0), uint8(0))
	f.Add([]byte("a block that is shorter than sixty-four bytes"), uint64(42), uint64(0x0123456789abcdef), uint8(12))
	f.Fuzz(func(t *testing.T, data []byte, h1, h2 uint64, kb uint8) {
		var blk [8]uint64
		var raw [64]byte
		copy(raw[:], data)
		for i := range blk {
			blk[i] = binary.LittleEndian.Uint64(raw[8*i:])
		}
		h, k := Hash{H1: h1, H2: h2}, 1+uint32(kb)%maxStraightK
		if got, want := vecProbeAt(&blk, h, k), scalarProbe(&blk, h, k); got != want {
			t.Fatalf("k=%d h=%x block %x: vector %v, scalar %v", k, h, blk, got, want)
		}
	})
}

// scalarProbe is testBlocked's answer for h and k on the one block blk.
func scalarProbe(blk *[8]uint64, h Hash, k uint32) bool {
	f := Filter{wp: &blk[0], nw: 8, k: k, mode: modeBlocked}
	return f.testBlocked(h)
}

// vecProbeAt is the vector Test's answer for h and k on blk.
func vecProbeAt(blk *[8]uint64, h Hash, k uint32) bool {
	if k <= fieldsPerWord {
		return testBlockVec7(blk, h.H2, k)
	}
	return testBlockVec14(blk, h.H1, h.H2, k)
}

func ExampleFilter_Test_vector() {
	// Whatever the CPU, the vector and the scalar Test set and read the
	// same bits, so answers (and files) never depend on where they ran.
	f, _ := New(1000, 0.01)
	f.AddString("alpha")
	fmt.Println(f.TestString("alpha"), f.TestString("omega"))
	// Output: true false
}
