package cuckoo

import "testing"

// RedisBloom's hash, fingerprint and buckets of a few items in a filter
// of 512 buckets (docs/CUCKOO.md §3, observed on RedisBloom 2.8.20).
func TestHashFingerprintAndBucketsMatchRedisBloom(t *testing.T) {
	seq := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i)
		}
		return string(b)
	}
	tests := []struct {
		item       string
		h          uint64
		fp         byte
		i2         uint64
		bkt1, bkt2 uint64
	}{
		{"", 0x0000000000000000, 1, 0x000000005bd1e995, 0, 405},
		{"a", 0x071717d2d36b6b11, 196, 0x071717949fddbd05, 273, 261},
		{"foo", 0xcdde38358fd25b01, 217, 0xcdde38785b3ca44c, 257, 76},
		{"hello", 0x1e68d17c457bf117, 159, 0x1e68d145421be29c, 279, 156},
		{seq(8), 0x53ed3741240b250c, 27, 0x53ed37488b2887bb, 268, 443},
		{seq(9), 0x3ca12618533c59af, 181, 0x3ca12658b8567ff6, 431, 502},
		{"The quick brown fox jumps over the lazy dog", 0x5589ca33042a861b, 173, 0x5589ca0d08f05faa, 27, 426},
	}
	f, err := New(DefaultCapacity)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		h := Hash([]byte(tt.item))
		if h != tt.h || HashString(tt.item) != tt.h {
			t.Errorf("Hash(%q) = %#016x, want %#016x", tt.item, h, tt.h)
			continue
		}
		k := keyOf(h)
		s := &f.subs[0]
		if k.fp != tt.fp || k.h2 != tt.i2 || s.index(k.h1) != tt.bkt1 || s.index(k.h2) != tt.bkt2 {
			t.Errorf("%q: fp %d i2 %#x buckets %d %d, want %d %#x %d %d", tt.item, k.fp, k.h2, s.index(k.h1), s.index(k.h2), tt.fp, tt.i2, tt.bkt1, tt.bkt2)
		}
		if alt(k.fp, k.h2) != k.h1 {
			t.Errorf("%q: the alternate of the alternate is not the first bucket", tt.item)
		}
		if err := f.AddString(tt.item); err != nil {
			t.Fatal(err)
		}
		if d := s.data[2*tt.bkt1:]; d[0] != tt.fp && d[1] != tt.fp {
			t.Errorf("%q: fingerprint %d not stored in bucket %d: %v", tt.item, tt.fp, tt.bkt1, d[:2])
		}
	}
}
