package murmur

import "testing"

// MurmurHash64A of a few inputs as RedisBloom computes them: seed 0 as
// its cuckoo filters hash (docs/CUCKOO.md §3), and every tail length.
func TestHash64A(t *testing.T) {
	tests := []struct {
		in   string
		seed uint64
		want uint64
	}{
		{"", 0, 0},
		{"a", 0, 0x071717d2d36b6b11},
		{"foo", 0, 0xcdde38358fd25b01},
		{"hello", 0, 0x1e68d17c457bf117},
		{"\x00\x01\x02\x03\x04\x05\x06\x07", 0, 0x53ed3741240b250c},
		{"\x00\x01\x02\x03\x04\x05\x06\x07\x08", 0, 0x3ca12618533c59af},
		{"The quick brown fox jumps over the lazy dog", 0, 0x5589ca33042a861b},
	}
	for _, tt := range tests {
		if got := Hash64A([]byte(tt.in), tt.seed); got != tt.want {
			t.Errorf("Hash64A(%q, %#x) = %#016x, want %#016x", tt.in, tt.seed, got, tt.want)
		}
	}
	if Hash64A([]byte("a"), 1) == Hash64A([]byte("a"), 0) {
		t.Error("the seed changes nothing")
	}
}

// MurmurHash2 of a few inputs as RedisBloom computes them (the first
// round of its 32-bit Bloom hash has seed 0x9747b28c), every tail length.
func TestHash2(t *testing.T) {
	tests := []struct {
		in   string
		seed uint32
		want uint32
	}{
		{"", 0x9747b28c, 0x106e08d9},
		{"a", 0x9747b28c, 0xa2d0b27c},
		{"ab", 0x9747b28c, 0x12d8262a},
		{"abc", 0x9747b28c, 0x1c94221b},
		{"abcd", 0x9747b28c, 0xb11ab5f4},
		{"hello", 0x9747b28c, 0x7f1ddbbd},
		{"hello", 0, 0xe56129cb},
		{"The quick brown fox jumps over the lazy dog", 0x9747b28c, 0x1d84d036},
	}
	for _, tt := range tests {
		if got := Hash2([]byte(tt.in), tt.seed); got != tt.want {
			t.Errorf("Hash2(%q, %#x) = %#08x, want %#08x", tt.in, tt.seed, got, tt.want)
		}
	}
}
