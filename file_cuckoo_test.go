package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/bloomery/bloom/cuckoo"
)

// newCuckooT is a cuckoo filter for n items (RedisBloom's defaults).
func newCuckooT(t testing.TB, n uint64) *cuckoo.Filter {
	t.Helper()
	f, err := cuckoo.New(max(n, 4))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustMarshalCuckoo(t testing.TB, f *cuckoo.Filter) []byte {
	t.Helper()
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A cuckoo filter's errors from LoadAny and OpenAny wrap both package
// cuckoo's sentinel and this package's, and sizes are checked before
// allocating, from a file as from a bytes.Reader.
func TestLoadAnyCuckooErrors(t *testing.T) {
	good := mustMarshalCuckoo(t, newCuckooT(t, 1000))
	crc := bytes.Clone(good)
	crc[len(crc)-9]++ // the last payload byte
	tests := []struct {
		name       string
		data       []byte
		opts       []Option
		want, also error
	}{
		{"payload CRC", crc, nil, ErrChecksum, cuckoo.ErrChecksum},
		{"truncated", good[:len(good)-1], nil, ErrFormat, cuckoo.ErrFormat},
		{"too large", good, []Option{WithMaxBytes(100)}, ErrTooLarge, cuckoo.ErrTooLarge},
	}
	for _, tt := range tests {
		for _, how := range []string{"LoadAny", "OpenAny"} {
			var err error
			if how == "LoadAny" {
				_, err = LoadAny(bytes.NewReader(tt.data), tt.opts...)
			} else {
				_, err = OpenAny(writeFile(t, tt.data), tt.opts...)
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, tt.also) {
				t.Errorf("%s: %s: %v, want %v and %v", tt.name, how, err, tt.want, tt.also)
			}
		}
	}
	// A header that claims more than the file holds is refused before
	// the sub-filters are allocated: LoadAny hands cuckoo.Load the length.
	big := bytes.Clone(good)
	binary.LittleEndian.PutUint64(big[32:], 1<<29) // buckets, in the header
	binary.LittleEndian.PutUint64(big[72:], 1<<29) // and in the parameter block
	binary.LittleEndian.PutUint32(big[60:], crc32.Checksum(big[:60], castagnoli))
	binary.LittleEndian.PutUint32(big[124:], crc32.Checksum(big[64:124], castagnoli))
	if _, err := LoadAny(bytes.NewReader(big)); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a 1 GiB filter cut to 200 bytes: %v, want a truncation error", err)
	}
}
