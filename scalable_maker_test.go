package bloom

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"testing"
	"unsafe"
)

// makerCases are parameter sets whose filters a ScalableMaker must make
// exactly as NewScalable does.
var makerCases = []struct {
	name string
	n0   uint64
	p    float64
	opts []Option
}{
	{"default small (classic first)", 100, 0.01, nil},
	{"RedisBloom split", 100, 0.01, []Option{WithRedisBloomSplit()}},
	{"blocked first", 5000, 0.001, nil},
	{"uniform blocked", 100, 0.01, []Option{WithGrowth(Growth{UniformLayout: true})}},
	{"classic", 1000, 1e-4, []Option{WithLayout(Classic)}},
	{"RedisBloom layout", 100, 0.01, []Option{WithLayout(RedisBloom)}},
	{"keyed", 300, 0.01, []Option{WithKey([16]byte{1, 2, 3})}},
	{"concurrent", 300, 0.01, []Option{WithConcurrent()}},
	{"non-scaling", 50, 0.05, []Option{WithNonScaling()}},
	{"expansion 4", 10, 0.01, []Option{WithExpansion(4)}},
}

// TestScalableMakerAsNewScalable checks that New and Init make the
// filter NewScalable makes: the same bytes when empty, after filling
// past the first sub-filter (growth), and the same answers.
func TestScalableMakerAsNewScalable(t *testing.T) {
	for _, tc := range makerCases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := NewScalable(tc.n0, tc.p, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewScalableMaker(tc.n0, tc.p, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.FirstSizing(); got != want.SubFilterGeometry()[0].Sizing {
				t.Fatalf("FirstSizing %+v, want %+v", got, want.SubFilterGeometry()[0].Sizing)
			}
			if uint64(m.Words())*8 != want.Bytes() {
				t.Fatalf("Words %d for %d bytes", m.Words(), want.Bytes())
			}
			var inited Scalable
			if err := m.Init(&inited, nil); err != nil {
				t.Fatal(err)
			}
			for _, got := range []*Scalable{m.New(), &inited} {
				sameEncoding(t, "empty", got, want)
			}
			items := int(2*tc.n0 + 10)
			fill := func(s *Scalable) error {
				for i := range items {
					if _, err := s.AddString(fmt.Sprint("item-", i)); err != nil && !errors.Is(err, ErrFull) {
						return err
					}
				}
				return nil
			}
			for _, s := range []*Scalable{want, &inited} {
				if err := fill(s); err != nil {
					t.Fatal(err)
				}
			}
			sameEncoding(t, "filled", &inited, want)
			for i := range items {
				if !inited.TestString(fmt.Sprint("item-", i)) && want.TestString(fmt.Sprint("item-", i)) {
					t.Fatalf("item-%d: a false negative", i)
				}
			}
		})
	}
}

func sameEncoding(t *testing.T, when string, got, want *Scalable) {
	t.Helper()
	g, err := got.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	w, err := want.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s: the maker's filter encodes to %d bytes unlike NewScalable's %d", when, len(g), len(w))
	}
}

// TestScalableMakerErrors checks that a maker refuses what NewScalable
// refuses, with the same error.
func TestScalableMakerErrors(t *testing.T) {
	cases := []struct {
		name string
		n0   uint64
		p    float64
		opts []Option
		want error
	}{
		{"capacity 0", 0, 0.01, nil, ErrInvalidCapacity},
		{"rate 1", 100, 1, nil, ErrInvalidRate},
		{"too large", 1 << 30, 1e-9, []Option{WithMaxBytes(1 << 20)}, ErrTooLarge},
		{"keyed RedisBloom", 100, 0.01, []Option{WithLayout(RedisBloom), WithKey([16]byte{1})}, ErrInvalidLayout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, want := NewScalable(tc.n0, tc.p, tc.opts...)
			_, err := NewScalableMaker(tc.n0, tc.p, tc.opts...)
			if !errors.Is(err, tc.want) || want == nil || err.Error() != want.Error() {
				t.Fatalf("NewScalableMaker: %v; NewScalable: %v; want %v", err, want, tc.want)
			}
		})
	}
}

// TestScalableMakerInitWords checks that Init uses the caller's words
// for the first sub-filter (they hold its bits), and refuses words of the
// wrong length or, for a blocked filter, misaligned ones.
func TestScalableMakerInitWords(t *testing.T) {
	classic, err := NewScalableMaker(100, 0.01, WithRedisBloomSplit())
	if err != nil {
		t.Fatal(err)
	}
	if classic.FirstSizing().Layout != Classic {
		t.Fatalf("layout %v, want a classic first sub-filter", classic.FirstSizing().Layout)
	}
	blocked, err := NewScalableMaker(5000, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	aligned := alignedWords(uint64(blocked.Words()) + 8)
	cases := []struct {
		name  string
		m     *ScalableMaker
		words []uint64
		ok    bool
	}{
		{"classic, exact", classic, make([]uint64, classic.Words()), true},
		{"classic, short", classic, make([]uint64, classic.Words()-1), false},
		{"classic, long", classic, make([]uint64, classic.Words()+1), false},
		{"blocked, aligned", blocked, aligned[:blocked.Words()], true},
		{"blocked, misaligned", blocked, aligned[1 : blocked.Words()+1], false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s Scalable
			err := tc.m.Init(&s, tc.words)
			if !tc.ok {
				if !errors.Is(err, ErrInvalidSize) || s.first.nw != 0 || s.prm != nil {
					t.Fatalf("Init: %v, first sub-filter of %d words", err, s.first.nw)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.AddString("x"); err != nil {
				t.Fatal(err)
			}
			if unsafe.SliceData(s.first.words()) != unsafe.SliceData(tc.words) {
				t.Fatal("the first sub-filter does not use the words given")
			}
			set := 0
			for _, w := range tc.words {
				set += bits.OnesCount64(w)
			}
			if set == 0 || !s.TestString("x") {
				t.Fatalf("%d bits set in the words given; Test(x) %v", set, s.TestString("x"))
			}
		})
	}
}
