package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"unsafe"
)

// shapeOf returns s's shape encoding and state; s has one sub-filter.
func shapeOf(t testing.TB, s *Scalable) (Shape, []byte, []byte) {
	t.Helper()
	sh, state, ok := s.AppendState(nil)
	if !ok {
		t.Fatal("AppendState: no state for a filter of one sub-filter")
	}
	enc, err := sh.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return sh, enc, state
}

func TestShapeStateRoundTrip(t *testing.T) {
	for _, c := range dumpCases {
		t.Run(c.name, func(t *testing.T) {
			s := grownScalable(t, min(c.items, 40), c.so, c.opts...)
			sh, enc, state := shapeOf(t, s)
			if len(enc) != ShapeSize || len(state) != sh.StateSize() || sh.EncodedSize() != s.EncodedSize() {
				t.Fatalf("shape %d bytes, state %d (StateSize %d), EncodedSize %d (filter's %d)",
					len(enc), len(state), sh.StateSize(), sh.EncodedSize(), s.EncodedSize())
			}
			whole := encodeScalable(t, s)
			if !bytes.Equal(whole[ShapeSize:ShapeSize+len(state)-8], state[8:]) {
				t.Fatal("the state's bits are not the encoding's payload")
			}
			l, err := NewStateLoader(enc, c.loadOpts()...)
			if err != nil {
				t.Fatal(err)
			}
			if l.StateSize() != len(state) || l.EncodedSize() != s.EncodedSize() {
				t.Fatalf("loader's StateSize %d, EncodedSize %d; want %d, %d", l.StateSize(), l.EncodedSize(), len(state), s.EncodedSize())
			}
			for range 2 { // the loader's buffer is reused
				got, err := l.Load(state)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(encodeScalable(t, got), whole) {
					t.Fatal("the loaded filter encodes differently")
				}
				if got.first.concurrent != s.first.concurrent {
					t.Fatalf("loaded concurrent=%v, want %v", got.first.concurrent, s.first.concurrent)
				}
				for i := range min(c.items, 40) {
					if !got.TestString(fmt.Sprintf("key%d", i)) {
						t.Fatalf("false negative for key%d", i)
					}
				}
			}
		})
	}
}

func TestShapesEqualForFiltersMadeAlike(t *testing.T) {
	a := grownScalable(t, 3, Growth{})
	b := grownScalable(t, 30, Growth{})
	shA, encA, _ := shapeOf(t, a)
	shB, encB, _ := shapeOf(t, b)
	if shA != shB || !bytes.Equal(encA, encB) {
		t.Fatal("filters made alike have different shapes")
	}
	for name, opts := range map[string][]Option{
		"classic":  {WithLayout(Classic)},
		"keyed":    {WithKey(fuzzKey)},
		"rb":       {WithLayout(RedisBloom)},
		"capacity": nil,
	} {
		n := uint64(50)
		if name == "capacity" {
			n = 51
		}
		o, err := NewScalable(n, 0.01, opts...)
		if err != nil {
			t.Fatal(err)
		}
		sh, enc, _ := shapeOf(t, o)
		if sh == shA || bytes.Equal(enc, encA) {
			t.Errorf("%s: the same shape as the default filter's", name)
		}
	}
}

func TestAppendStateOfGrownFilter(t *testing.T) {
	s := grownScalable(t, 200, Growth{})
	if len(s.filters()) < 2 {
		t.Fatal("the filter did not grow")
	}
	b := []byte("prefix")
	sh, got, ok := s.AppendState(b)
	if ok || sh != (Shape{}) || !bytes.Equal(got, b) {
		t.Fatalf("AppendState of a grown filter: ok=%v, %q", ok, got)
	}
	if _, err := (Shape{}).AppendBinary(nil); !errors.Is(err, ErrFormat) {
		t.Fatalf("the zero Shape's encoding: %v", err)
	}
}

func TestStateLoaderRefuses(t *testing.T) {
	s := grownScalable(t, 20, Growth{})
	_, enc, state := shapeOf(t, s)
	grown := encodeScalable(t, grownScalable(t, 200, Growth{}))
	counted := bytes.Clone(enc)
	binary.LittleEndian.PutUint64(counted[48:], 5)
	shapeCases := []struct {
		name  string
		shape []byte
		opts  []Option
		want  error
	}{
		{"short", enc[:ShapeSize-1], nil, ErrFormat},
		{"a grown filter's headers", grown[:ShapeSize], nil, ErrFormat},
		{"a count", counted, nil, ErrChecksum},
		{"corrupt", append(bytes.Clone(enc[:100]), append([]byte{enc[100] ^ 1}, enc[101:]...)...), nil, ErrChecksum},
		{"over the limit", enc, []Option{WithMaxBytes(64)}, ErrTooLarge},
		{"keyed, no key", mustShape(t, WithKey(fuzzKey)), nil, ErrKeyRequired},
		{"a sub-filter where the chain goes", append(bytes.Clone(enc[ShapeSize-headerSize:]), enc[headerSize:]...), nil, ErrFormat},
	}
	for _, c := range shapeCases {
		if _, err := NewStateLoader(c.shape, c.opts...); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	l, err := NewStateLoader(enc)
	if err != nil {
		t.Fatal(err)
	}
	over := bytes.Clone(state)
	binary.LittleEndian.PutUint64(over, 51) // above the capacity of 50
	for name, st := range map[string][]byte{
		"short": state[:len(state)-1], "long": append(bytes.Clone(state), 0), "count above capacity": over,
	} {
		if _, err := l.Load(st); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
	if _, err := l.Load(state); err != nil {
		t.Fatalf("a good state after bad ones: %v", err)
	}
}

// LoadInto decodes into the caller's Scalable and bit array, which the
// filter then uses: adds to it land in those words.
func TestStateLoadInto(t *testing.T) {
	for _, c := range []struct {
		name string
		n    uint64
		opts []Option
	}{
		{"classic first sub-filter", 50, nil},
		{"blocked", 10000, nil},
		{"redisbloom", 50, []Option{WithLayout(RedisBloom)}},
		{"keyed concurrent", 50, []Option{WithKey(fuzzKey), WithConcurrent(), WithLayout(Classic)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewScalable(c.n, 0.01, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			addKeys(t, s, "a", 20)
			_, enc, state := shapeOf(t, s)
			var loadOpts []Option
			for _, o := range c.opts {
				if cfg := o(config{}); cfg.keyed || cfg.concurrent {
					loadOpts = append(loadOpts, o)
				}
			}
			l, err := NewStateLoader(enc, loadOpts...)
			if err != nil {
				t.Fatal(err)
			}
			n := int(l.Sizing().Bits / 64)
			if l.Sizing() != s.first.Sizing() {
				t.Fatalf("Sizing %+v, the filter's %+v", l.Sizing(), s.first.Sizing())
			}
			backing := make([]uint64, n+8)
			if l.Sizing().Layout == Blocked { // an unaligned array is refused, dst left zero
				off := 0
				if uintptr(unsafe.Pointer(&backing[0]))&63 == 0 {
					off = 1
				}
				var dst Scalable
				if err := l.LoadInto(&dst, backing[off:off+n], state); !errors.Is(err, ErrInvalidSize) || dst.prm != nil {
					t.Fatalf("unaligned: %v", err)
				}
			}
			var dst Scalable
			if err := l.LoadInto(&dst, make([]uint64, n+1), state); !errors.Is(err, ErrInvalidSize) || dst.prm != nil {
				t.Fatalf("a word too many: %v", err)
			}
			words := newWords(l.Sizing().Layout, uint64(n))
			bad := bytes.Clone(state)
			binary.LittleEndian.PutUint64(bad, 1<<40) // above the capacity (a RedisBloom chain does not check it)
			if err := l.LoadInto(&dst, words, bad); l.Sizing().Layout != RedisBloom &&
				(!errors.Is(err, ErrFormat) || dst.prm != nil || dst.first.nw != 0) {
				t.Fatalf("a bad state: %v, dst %+v", err, dst.first)
			}
			dst = Scalable{}
			clear(words)
			if err := l.LoadInto(&dst, words, state); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(encodeScalable(t, &dst), encodeScalable(t, s)) {
				t.Fatal("the filter loaded into the caller's memory encodes differently")
			}
			clear(words)
			if dst.TestString("a0") {
				t.Fatal("the filter does not use the caller's words")
			}
		})
	}
}

// mustShape is the shape encoding of a new filter of capacity 50 made
// with opts.
func mustShape(t testing.TB, opts ...Option) []byte {
	t.Helper()
	s, err := NewScalable(50, 0.01, opts...)
	if err != nil {
		t.Fatal(err)
	}
	_, enc, _ := shapeOf(t, s)
	return enc
}

func BenchmarkAppendState(b *testing.B) {
	s, err := NewScalable(100, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	s.AddString("x")
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		_, buf, _ = s.AppendState(buf[:0])
	}
}

func BenchmarkStateLoad(b *testing.B) {
	s, err := NewScalable(100, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	s.AddString("x")
	_, enc, state := shapeOf(b, s)
	l, err := NewStateLoader(enc)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Load(state); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzStateLoader feeds arbitrary shapes and states to the loader: an
// error or a filter whose encoding is the shape's with the state's
// count and bits, never a panic.
func FuzzStateLoader(f *testing.F) {
	for _, c := range dumpCases {
		if len(c.loadOpts()) > 0 {
			continue
		}
		s := grownScalable(f, min(c.items, 10), c.so, c.opts...)
		_, enc, state := shapeOf(f, s)
		f.Add(enc, state)
	}
	f.Fuzz(func(t *testing.T, shape, state []byte) {
		l, err := NewStateLoader(shape, WithMaxBytes(1<<16))
		if err != nil {
			return
		}
		s, err := l.Load(state)
		if err != nil {
			return
		}
		sh, got, ok := s.AppendState(nil)
		if !ok || !bytes.Equal(got, state) {
			t.Fatalf("the loaded filter's state differs: ok=%v", ok)
		}
		enc, err := sh.AppendBinary(nil)
		if err != nil || !bytes.Equal(enc, shape) {
			t.Fatalf("the loaded filter's shape differs: %v", err)
		}
	})
}
